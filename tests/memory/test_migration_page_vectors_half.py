"""Migration 0024: page vectors kept in half precision (half the bytes), their bits computed again from them, and
the vector channel's index keyed on (space, id)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from memory.retrieval.rows import vector_text
from tests import builders
from tests.memory.migrating import latest as _latest
from tests.memory.migrating import migrate as _migrate
from tests.memory.migrating import page_before

BEFORE = [("memory", "0023_page_rows_rewritten_whole")]
DIMENSIONS = 384


def unit_vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIMENSIONS).astype(np.float32)
    return vector / np.linalg.norm(vector)


def stored(page_id: int) -> dict:
    """How the page's vectors are stored: their types, sizes in bytes and values."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_typeof(embedding)::text, pg_typeof(topic_embedding)::text, pg_column_size(embedding), "
            "embedding::text, topic_embedding::text FROM memory_page WHERE id = %s",
            [page_id],
        )
        types, topic_type, size, embedding, topic = cursor.fetchone()
    values = [
        None if text is None else np.array(text.strip("[]").split(","), dtype=np.float32) for text in (embedding, topic)
    ]
    return {"types": (types, topic_type), "size": size, "vectors": values}


def code_matches(page_id: int) -> bool:
    """Whether the first pass's code (the one-bit column until migration 0034, dropped by 0035) is that of the
    vector as stored."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT embedding_code = memory_vector_code(embedding) FROM memory_page WHERE id = %s", [page_id]
        )
        return cursor.fetchone()[0]


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_page_vectors_stored_before_are_kept_in_half_precision_with_their_bits_computed_again(space):
    embedding, topic = unit_vector(1), unit_vector(2)
    try:
        _migrate(BEFORE)
        page = page_before(BEFORE, space=space, segment=builders.segment(space, summary="band", keywords=["band"]))
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memory_page SET embedding = %s::vector, topic_embedding = %s::vector WHERE id = %s",
                [vector_text(embedding), vector_text(topic), page.id],
            )
        before = stored(page.id)
        assert before["types"] == ("vector", "vector") and before["size"] == 8 + 4 * DIMENSIONS

        _migrate(_latest())

        after = stored(page.id)
        assert after["types"] == ("halfvec", "halfvec") and after["size"] == 8 + 2 * DIMENSIONS
        assert builders.same_page_vector(after["vectors"][0], embedding)
        assert builders.same_page_vector(after["vectors"][1], topic)
        assert code_matches(page.id), "the code is that of the vector as now stored"
    finally:
        _migrate(_latest())


def test_the_page_vector_stays_in_the_row(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'memory_page'::regclass AND attname = 'embedding'"
        )
        assert cursor.fetchone()[0] == "m", "MAIN: kept in the row unless nothing else could make it fit"


def test_a_page_stored_now_keeps_its_vectors_in_half_precision(space):
    page = builders.page(space, segment=builders.segment(space, summary="band", keywords=["band"]))
    now = stored(page.id)
    assert now["types"][0] == "halfvec" and now["size"] == 8 + 2 * len(page.embedding)
    assert builders.same_page_vector(now["vectors"][0], page.embedding) and code_matches(page.id)
