"""Each user's pages kept together on disk: the page table rewritten in (space, seq) order.

When users talk at once their pages are written interleaved, so one user's 6,000 pages lie on as many 8 KB table
pages, each shared with other users' rows; a retrieval that must read them from the disk reads one table page per
row it needs. PostgreSQL's CLUSTER rewrites the table in the order of an index, here the space's page sequence
(`page_seq_per_space`), so a user's pages fill neighbouring table pages, which PostgreSQL reads in combined
requests: reading from the disk, retrieval's p50 and p95 halve (see docs/decisions/0007-pages-clustered-by-user.md).

CLUSTER holds the table's ACCESS EXCLUSIVE lock while it runs (minutes for 1,000 full users on two cores):
retrieval and writes to memory wait. Run it in a maintenance window, when `page_scatter` has grown; pages written
afterwards are placed wherever there is room, so the order decays as users talk.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

from django.db import connection

from memory.models import MemorySpace, Page

ORDER_INDEX = "page_seq_per_space"  # the unique (space, seq) constraint's index
SCATTER_SAMPLE = 50

# For a random sample of spaces: how many, their pages, the table pages holding each one's pages (summed), and the
# table's rows per table page (from its statistics; NULL before the table was first analysed).
SCATTER_SQL = """
WITH sampled AS MATERIALIZED (SELECT id FROM {space} ORDER BY random() LIMIT %(sample)s),
per_space AS (
    SELECT count(*) AS pages, count(DISTINCT (ctid::text::point)[0]) AS table_pages
    FROM {page} WHERE space_id IN (SELECT id FROM sampled) GROUP BY space_id
)
SELECT (SELECT count(*) FROM sampled), coalesce(sum(pages), 0)::bigint, coalesce(sum(table_pages), 0)::bigint,
       (SELECT reltuples / relpages FROM pg_class WHERE oid = %(table)s::regclass AND reltuples > 0 AND relpages > 0)
FROM per_space
"""


@dataclass(frozen=True)
class PageScatter:
    """How the sampled spaces' pages lie: on `table_pages` table pages, where `rows_per_table_page` rows (the table's
    average) would fit them on `pages / rows_per_table_page`."""

    spaces: int
    pages: int
    table_pages: int
    rows_per_table_page: float | None

    @property
    def ratio(self) -> float | None:
        """1.0: each space's pages together; up to the rows per table page when each row shares its table page with
        other users' rows. None before the table has statistics, or without pages."""
        if not self.pages or not self.rows_per_table_page:
            return None
        return self.table_pages / max(self.pages / self.rows_per_table_page, 1.0)


def page_scatter(*, sample: int = SCATTER_SAMPLE) -> PageScatter:
    """How scattered users' pages lie in the page table, from `sample` random spaces (one statement)."""
    table = Page._meta.db_table
    sql = SCATTER_SQL.format(page=table, space=MemorySpace._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"table": table, "sample": sample})
        spaces, pages, table_pages, rows_per_table_page = cursor.fetchone()
    return PageScatter(spaces, pages, table_pages, rows_per_table_page)


def pages_cluster() -> float:
    """Rewrite the page table in (space, seq) order and refresh its statistics; returns the seconds it took. Holds
    the table's exclusive lock meanwhile (see the module's docstring)."""
    table = Page._meta.db_table
    started = perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"CLUSTER {table} USING {ORDER_INDEX}")
        cursor.execute(f"ANALYZE {table}")
    return perf_counter() - started
