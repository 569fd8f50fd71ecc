"""Migrations 0016–0017 on pages stored before them: every page gains its space's lexeme and its binary vector,
and its search vector is stored inline again."""

from __future__ import annotations

import pytest
from django.db import connection

from tests import builders
from tests.memory.migrating import latest as _latest
from tests.memory.migrating import migrate as _migrate

BEFORE = [("memory", "0015_pii_personal_data")]


def _column(page_id: int, expression: str):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {expression} FROM memory_page WHERE id = %s", [page_id])
        return cursor.fetchone()[0]


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_pages_stored_before_the_migration_are_found_by_space_and_by_binary_vector(space):
    segment = builders.segment_with_pages(space, summary="bread", messages=["baking sourdough bread at home"])
    page = segment.pages.get()
    try:
        _migrate(BEFORE)
        assert "space" not in _column(page.id, "search::text")

        _migrate(_latest())

        assert f"'space {space.id}'" in _column(page.id, "search::text")
        assert _column(page.id, "length(embedding_code)") == 2 * len(page.embedding)  # the bits are now a code (0034)
        assert _column(page.id, "search @@ to_tsquery('english', 'sourdough')") is True
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = 'memory_page'::regclass AND attname = 'search'"
            )
            assert cursor.fetchone()[0] == "m"  # MAIN: kept in the row
    finally:
        _migrate(_latest())
