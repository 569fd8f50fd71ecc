"""The vector channel's first pass ranks by two bits a dimension (migration 0034): every page and passage vector has
its three-level code, written and rewritten with the vector by the database, given to rows stored before the
migration, and kept in the covering indexes the first pass reads alone. The one-bit column is gone (0035)."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from memory.models import Page, PagePassage
from memory.retrieval.rows import vector_text
from tests import builders
from tests.memory.migrating import latest as _latest
from tests.memory.migrating import migrate as _migrate
from tests.memory.migrating import page_before

BEFORE = [("memory", "0033_pages_vacuumed_sooner")]
DIMENSIONS = 384
THRESHOLD = 0.385 / np.sqrt(DIMENSIONS)


def unit_vector(seed: int) -> np.ndarray:
    """A random unit vector with no coordinate within 0.0001 of ±THRESHOLD (where half precision could round either
    way), so its levels are certain."""
    rng = np.random.default_rng(seed)
    while True:
        vector = rng.standard_normal(DIMENSIONS).astype(np.float32)
        vector /= np.linalg.norm(vector)
        if np.min(np.abs(np.abs(vector) - THRESHOLD)) > 1e-4:
            return vector


def expected_code(vector: np.ndarray) -> str:
    """The thermometer code: one bit for 'above +t' per dimension, then one for 'above -t'."""
    above, not_below = (vector > THRESHOLD), (vector > -THRESHOLD)
    return "".join("1" if bit else "0" for bit in [*above, *not_below])


def code_of(table: str, row_id: int) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT embedding_code::text FROM {table} WHERE id = %s", [row_id])
        return cursor.fetchone()[0]


def vector_set(table: str, row_id: int, vector: np.ndarray) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET embedding = %s::halfvec WHERE id = %s", [vector_text(vector), row_id])


def a_passage(page: Page, vector: np.ndarray) -> PagePassage:
    return PagePassage.objects.create(page=page, space_id=page.space_id, start=0, end=10, embedding=vector)


def test_a_page_written_now_has_the_two_bit_code_of_its_vector(space):
    page = builders.turn(space, user_message="I keep bees on the roof").page
    vector_set("memory_page", page.id, unit_vector(1))

    assert code_of("memory_page", page.id) == expected_code(unit_vector(1))


def test_a_page_gets_its_code_from_the_database_when_it_is_inserted_with_a_vector(space):
    segment = builders.segment(space, summary="bees", keywords=["bees"])
    page = builders.page(space, user_message="The hives need checking in May", segment=segment)
    with connection.cursor() as cursor:
        cursor.execute("SELECT embedding::text FROM memory_page WHERE id = %s", [page.id])
        stored = np.array(cursor.fetchone()[0].strip("[]").split(","), dtype=np.float32)

    assert code_of("memory_page", page.id) == expected_code(stored)


def test_a_new_vector_gives_a_new_code_and_a_page_without_one_has_none(space):
    page = builders.turn(space, user_message="I keep bees on the roof").page
    vector_set("memory_page", page.id, unit_vector(1))
    vector_set("memory_page", page.id, unit_vector(2))
    assert code_of("memory_page", page.id) == expected_code(unit_vector(2))

    with connection.cursor() as cursor:
        cursor.execute("UPDATE memory_page SET embedding = NULL WHERE id = %s", [page.id])
    assert code_of("memory_page", page.id) is None


def test_an_update_that_leaves_the_vector_alone_keeps_its_code(space):
    page = builders.turn(space, user_message="I keep bees on the roof").page
    vector_set("memory_page", page.id, unit_vector(3))

    Page.objects.filter(pk=page.pk).update(pinned=True)
    page.refresh_from_db()
    page.save()

    assert code_of("memory_page", page.id) == expected_code(unit_vector(3))


def test_a_passage_has_the_code_of_its_vector(space):
    page = builders.turn(space, user_message="A long page").page

    passage = a_passage(page, unit_vector(4))

    assert code_of("memory_pagepassage", passage.id) == expected_code(unit_vector(4))


@pytest.mark.django_db
def test_the_hamming_distance_of_two_codes_is_the_distance_between_their_levels():
    levels = {seed: (unit_vector(seed) > THRESHOLD).astype(int) + (unit_vector(seed) > -THRESHOLD) for seed in (5, 6)}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT memory_vector_code(%s::halfvec) <~> memory_vector_code(%s::halfvec)",
            [vector_text(unit_vector(5)), vector_text(unit_vector(6))],
        )
        distance = cursor.fetchone()[0]

    assert distance == np.abs(levels[5] - levels[6]).sum()
    assert distance > 0


@pytest.mark.django_db
def test_the_first_pass_reads_covering_indexes_of_the_codes_keyed_on_the_space_and_the_row():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('memory_page', 'memory_pagepassage') "
            "AND indexname LIKE '%%space_%%'"
        )
        definitions = dict(cursor.fetchall())

    assert definitions["page_space_code"].endswith("(space_id, id) INCLUDE (embedding_code)")
    assert definitions["passage_space_code"].endswith("(space_id, id) INCLUDE (embedding_code)")
    assert "page_space_bits" not in definitions and "passage_space_bits" not in definitions


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_pages_and_passages_stored_before_the_migration_are_given_their_codes(space):
    try:
        _migrate(BEFORE)
        page = page_before(BEFORE, space=space, segment=builders.segment(space, summary="bees", keywords=["bees"]))
        vector_set("memory_page", page.id, unit_vector(7))
        with connection.cursor() as cursor:
            cursor.execute(
                'INSERT INTO memory_pagepassage (page_id, space_id, start, "end", embedding) '
                "VALUES (%s, %s, 0, 10, %s::halfvec) RETURNING id",
                [page.id, space.id, vector_text(unit_vector(8))],
            )
            passage_id = cursor.fetchone()[0]

        _migrate(_latest())

        assert code_of("memory_page", page.id) == expected_code(unit_vector(7))
        assert code_of("memory_pagepassage", passage_id) == expected_code(unit_vector(8))
    finally:
        _migrate(_latest())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_back_to_the_one_bit_indexes():
    try:
        _migrate(BEFORE)
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%%space_bits'")
            assert {name for (name,) in cursor.fetchall()} == {"page_space_bits", "passage_space_bits"}
            cursor.execute("SELECT count(*) FROM pg_proc WHERE proname = 'memory_vector_code'")
            assert cursor.fetchone()[0] == 0
    finally:
        _migrate(_latest())


def columns_of(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND NOT attisdropped", [table])
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db
def test_the_one_bit_column_is_gone_from_pages_and_passages():
    assert "embedding_code" in columns_of("memory_page") and "embedding_code" in columns_of("memory_pagepassage")
    assert "embedding_bits" not in columns_of("memory_page") | columns_of("memory_pagepassage")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_going_back_before_the_drop_gives_the_one_bit_column_of_each_stored_vector_again(space):
    page = builders.turn(space, user_message="We keep bees on the roof").page
    vector_set("memory_page", page.id, unit_vector(3))
    passage = a_passage(page, unit_vector(4))
    try:
        _migrate([("memory", "0034_two_bit_vector_codes")])

        with connection.cursor() as cursor:
            for table, row_id, seed in (("memory_page", page.id, 3), ("memory_pagepassage", passage.id, 4)):
                cursor.execute(f"SELECT embedding_bits::text FROM {table} WHERE id = %s", [row_id])
                signs = "".join("1" if x > 0 else "0" for x in unit_vector(seed))
                assert cursor.fetchone()[0] == signs
    finally:
        _migrate(_latest())
