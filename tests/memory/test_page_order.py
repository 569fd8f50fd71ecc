"""Each user's pages kept together on disk: the page table rewritten in (space, seq) order (`memory_cluster`)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from memory.services.page_order import page_scatter, pages_cluster

# Pages of two spaces written turn about, as when two users talk at once, each row about 2 KB (4 to a table page).
INTERLEAVED_SQL = """
INSERT INTO memory_page (space_id, seq, user_message, assistant_reply, at, tier, chain_summary, topic_summary,
    keywords, analysed, pinned, source, source_ref, source_meta, reply_source, created_at)
SELECT CASE WHEN n %% 2 = 0 THEN %(first)s ELSE %(second)s END, n, repeat(md5(n::text), 30), 'noted', now(), 'mtm',
    '', '', '{}', true, false, 'demo', '', '{}', 'assistant', now()
FROM generate_series(1, %(pages)s) n
"""


def interleaved_pages(space, other_space, pages: int = 400) -> None:
    with connection.cursor() as cursor:
        cursor.execute(INTERLEAVED_SQL, {"first": space.id, "second": other_space.id, "pages": pages})
        cursor.execute("ANALYZE memory_page")


def physical_order() -> list[tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT space_id, seq FROM memory_page ORDER BY ctid")
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)  # CLUSTER refuses a table with writes whose checks wait for the commit
def test_interleaved_users_pages_lie_scattered_and_clustering_puts_each_users_together(space, other_space):
    interleaved_pages(space, other_space)
    before = page_scatter()
    assert before.spaces == 2 and before.pages == 400 and before.ratio > 1.5  # each table page shared by both

    pages_cluster()

    after = page_scatter()
    assert after.pages == 400 and after.ratio == pytest.approx(1.0, abs=0.1)
    assert physical_order() == sorted(physical_order())  # by space, then by the space's page sequence


def test_the_scatter_is_unknown_without_pages(db):
    assert page_scatter().ratio is None


def test_the_command_only_reports_with_check(space, other_space):
    interleaved_pages(space, other_space, pages=40)
    order = physical_order()
    out = StringIO()
    call_command("memory_cluster", "--check", stdout=out)
    assert "40 pages of 2 sampled users" in out.getvalue() and physical_order() == order


@pytest.mark.django_db(transaction=True)
def test_the_command_clusters_and_reports_before_and_after(space, other_space):
    interleaved_pages(space, other_space, pages=40)
    out = StringIO()
    call_command("memory_cluster", stdout=out)
    assert "Before:" in out.getvalue() and "After:" in out.getvalue() and "Done in" in out.getvalue()
    assert physical_order() == sorted(physical_order())


@pytest.mark.django_db
def test_the_page_and_passage_tables_are_vacuumed_once_a_hundredth_of_their_rows_changed():
    """The vector channel's first pass stays an index-only scan only where the table pages are marked all-visible,
    which every turn, eviction and placement clears and only a vacuum sets again (decision 0021)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reloptions FROM pg_class WHERE relname IN ('memory_page', 'memory_pagepassage')"
        )
        options = dict(cursor.fetchall())

    sooner = {"autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_insert_scale_factor=0.01"}
    assert set(options) == {"memory_page", "memory_pagepassage"}
    assert all(sooner <= set(table_options or ()) for table_options in options.values()), options
