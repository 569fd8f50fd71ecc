"""Migration 0019 on pages stored before it: every page gains the keys of its words in its space, and the
full-text channel finds it through them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from memory.retrieval.search import retrieve
from tests import builders
from tests.builders import T0
from tests.memory.migrating import latest as _latest
from tests.memory.migrating import migrate as _migrate

BEFORE = [("memory", "0018_topic_vectors_stored_once")]


def _page_columns() -> set[str]:
    with connection.cursor() as cursor:
        return {column.name for column in connection.introspection.get_table_description(cursor, "memory_page")}


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_pages_stored_before_the_migration_are_found_by_their_words(space):
    segment = builders.segment_with_pages(space, summary="bread", messages=["baking sourdough bread at home"])
    page = segment.pages.get()
    try:
        _migrate(BEFORE)
        assert "search_keys" not in _page_columns()

        _migrate(_latest())

        result = retrieve(space=space, query="sourdough", now=T0 + timedelta(days=2), record_visits=False)
        assert [p.page.id for p in result.pages if "words" in p.found_by] == [page.id]
    finally:
        _migrate(_latest())


@pytest.mark.django_db
def test_the_page_word_indexes_insert_directly_without_a_pending_list_every_search_would_scan():
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reloptions FROM pg_class WHERE relname IN ('page_search', 'page_search_keys')")
        options = dict(cursor.fetchall())
    assert options == {"page_search": ["fastupdate=off"], "page_search_keys": ["fastupdate=off"]}
