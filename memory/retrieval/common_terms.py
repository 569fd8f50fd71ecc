"""The words most pages hold, for the full-text channel: lexemes that PostgreSQL's statistics of `memory_page.search`
find in more than COMMON_SHARE of all pages ("help", "week", "work" in most chats).

A question's common words do not bring pages into the words channel by themselves when it has a rarer word: they only
add their weight to the pages its rarer words found (Lucene's common-terms query). A question made only of common
words still finds every page that holds one. Without this, one everyday word in a question made the channel read a
fifth of the user's pages, one table page each, on the request's slowest path
([decisions/0024](../../docs/decisions/0024-common-words-add-weight-only.md)).

The list comes from ANALYZE's sample of the whole table (`pg_stats.most_common_elems`), read at most once per
REFRESH_SECONDS per process, never on a request that finds it fresh. Before the table has statistics the list is
empty and every word finds pages, as before.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from django.db import connection

COMMON_SHARE = 0.10  # a lexeme held by more than this share of all pages is common (decisions/0024)
REFRESH_SECONDS = 600.0

# The most common lexemes ANALYZE found in the page table's full-text column, with the share of sampled pages holding
# each; PostgreSQL appends three more numbers to the shares (their minimum, maximum and the share of empty values),
# which pair with no lexeme and are dropped.
COMMON_SQL = """
SELECT lexeme, share
FROM pg_stats stats,
     unnest(stats.most_common_elems::text::text[], stats.most_common_elem_freqs) AS common(lexeme, share)
WHERE stats.schemaname = current_schema() AND stats.tablename = 'memory_page' AND stats.attname = 'search'
  AND NOT stats.inherited AND lexeme IS NOT NULL AND share > %(share)s
ORDER BY lexeme
"""


@dataclass(frozen=True)
class CommonTerms:
    """Lexemes held by more than COMMON_SHARE of all pages, and the share of pages holding each."""

    lexemes: tuple[str, ...] = ()
    shares: tuple[float, ...] = ()

    def params(self) -> dict:
        return {"common": list(self.lexemes), "common_shares": list(self.shares)}


class _Cache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._terms = CommonTerms()
        self._read_at: float | None = None

    def get(self) -> CommonTerms:
        with self._lock:
            if self._read_at is not None and time.monotonic() - self._read_at < REFRESH_SECONDS:
                return self._terms
        terms = common_terms_read()
        with self._lock:
            self._terms, self._read_at = terms, time.monotonic()
        return terms

    def set(self, terms: CommonTerms) -> None:
        """Take `terms` as fresh (tests, and a process that has just read them otherwise)."""
        with self._lock:
            self._terms, self._read_at = terms, time.monotonic()

    def forget(self) -> None:
        with self._lock:
            self._terms, self._read_at = CommonTerms(), None


_cache = _Cache()


def common_terms() -> CommonTerms:
    """The common lexemes, as last read (at most REFRESH_SECONDS ago), or read now."""
    return _cache.get()


def common_terms_read() -> CommonTerms:
    """The common lexemes from the page table's statistics now; none before the table has been analyzed."""
    with connection.cursor() as cursor:
        cursor.execute(COMMON_SQL, {"share": COMMON_SHARE})
        rows = cursor.fetchall()
    return CommonTerms(tuple(lexeme for lexeme, _ in rows), tuple(float(share) for _, share in rows))


def common_terms_set(terms: CommonTerms) -> None:
    _cache.set(terms)


def common_terms_forget() -> None:
    """Read the statistics again on the next question."""
    _cache.forget()
