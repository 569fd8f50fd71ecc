"""Migrations 0022–0023: a page row keeps its texts inline (no TOAST lookups to read a loaded page), and rows
stored before them are written again so that theirs come back into the row."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection

from tests import builders
from tests.memory.migrating import latest as _latest
from tests.memory.migrating import migrate as _migrate
from tests.memory.migrating import page_before

BEFORE = [("memory", "0021_segment_pinned_index")]


def _text(seed: str) -> str:
    """Some 500 characters that do not compress (as varied prose compresses little), so the row stays long."""
    return " ".join(hashlib.sha256(f"{seed}{i}".encode()).hexdigest() for i in range(8))


# A turn of about a kilobyte: with the 1.5 KB embedding and its tsvector the row passes the 2 KB at which
# PostgreSQL's default moves texts out of line.
MESSAGE, REPLY = _text("message"), _text("reply")


def texts_out_of_line(page_id: int) -> list[str]:
    """The page's texts that are stored in TOAST, not in the row (PostgreSQL 17's pg_column_toast_chunk_id)."""
    if connection.pg_version < 170000:
        pytest.skip("pg_column_toast_chunk_id needs PostgreSQL 17 or later")
    columns = ("user_message", "assistant_reply", "chain_summary")
    with connection.cursor() as cursor:
        toasted = ", ".join(f"pg_column_toast_chunk_id({c}) IS NOT NULL" for c in columns)
        cursor.execute(f"SELECT {toasted} FROM memory_page WHERE id = %s", [page_id])
        return [column for column, out in zip(columns, cursor.fetchone(), strict=True) if out]


def a_long_turn(space, targets=BEFORE):
    """A long mid-term page written through the Page model as it was at `targets`."""
    segment = builders.segment(space, summary="band", keywords=["band"])
    fields = {"user_message": MESSAGE, "assistant_reply": REPLY, "chain_summary": REPLY}
    return page_before(targets, space=space, segment=segment, **fields)


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_a_page_stored_before_is_written_again_with_its_texts_in_the_row(space):
    try:
        _migrate(BEFORE)
        page = a_long_turn(space)
        assert texts_out_of_line(page.id), "before: moved out of line"

        _migrate(_latest())

        assert texts_out_of_line(page.id) == []
        with connection.cursor() as cursor:
            cursor.execute("SELECT user_message, assistant_reply FROM memory_page WHERE id = %s", [page.id])
            assert cursor.fetchone() == (MESSAGE, REPLY), "the texts are unchanged"
    finally:
        _migrate(_latest())


def test_a_page_stored_now_keeps_its_texts_in_the_row(space):
    assert texts_out_of_line(a_long_turn(space, _latest()).id) == []
