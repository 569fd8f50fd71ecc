"""Retrieval's page channels (vectors, full text) run on side connections beside its other reads, outside a
transaction: the same result as on one connection, which a transaction's retrieval keeps, as does one whose side
read fails."""

from __future__ import annotations

import time
from concurrent.futures import Future
from unittest.mock import patch

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.retrieval import rows
from memory.retrieval.search import retrieve
from memory.retrieval.side_readers import side_readers
from tests import builders

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Which songs did the garage band play at the wedding?"


def channels(statements: list[str]) -> set[str]:
    """The page channels among the statements this connection ran."""
    return {name for name, mark in (("words", "ts_rank_cd"), ("vector", "memory_vector_code")) if mark in statements}


@pytest.fixture
def space():
    space = builders.space_of(builders.end_user(tenant="beside"))
    segment = builders.segment(space, summary="the garage band", keywords=["band"])
    for n in range(6):
        builders.page(space, segment=segment, user_message=f"Our garage band played song {n} at the wedding")
    builders.page(space, user_message="Lunch was a curry")
    return space


def statements_here(space) -> tuple[str, object]:
    with CaptureQueriesContext(connection) as queries:
        result = retrieve(space=space, query=QUESTION, record_visits=False)
    return "\n".join(q["sql"] for q in queries.captured_queries), result


def ranked(result) -> list[tuple[int, dict]]:
    return [(scored.page.id, scored.found_by) for scored in result.ranked]


def test_outside_a_transaction_the_page_channels_are_read_beside_with_the_same_result(space, settings):
    here, beside = statements_here(space)
    assert channels(here) == set(), "both ran on side connections"
    settings.MEMORY_PARALLEL_READS = False
    alone, on_one_connection = statements_here(space)
    assert channels(alone) == {"words", "vector"}
    assert ranked(beside) == ranked(on_one_connection)
    assert {"words", "vector"} <= {channel for _, found_by in ranked(beside) for channel in found_by}


def test_inside_a_transaction_every_read_stays_on_its_connection(space):
    with transaction.atomic():
        here, _ = statements_here(space)
    assert channels(here) == {"words", "vector"}


def lost_connection(sql, params) -> Future:
    failed = Future()
    failed.set_exception(ConnectionError("side connection lost"))
    return failed


def shutting_down(sql, params) -> Future:
    raise RuntimeError("cannot schedule new futures after interpreter shutdown")


@pytest.mark.parametrize("failure", [lost_connection, shutting_down])
def test_a_side_read_that_fails_or_cannot_start_is_read_here(space, failure):
    expected = ranked(retrieve(space=space, query=QUESTION, record_visits=False))
    with patch.object(rows, "rows_beside", failure):
        here, result = statements_here(space)
    assert channels(here) == {"words", "vector"} and ranked(result) == expected


def test_side_readers_close_their_connections_and_open_new_ones_when_needed(space):
    retrieve(space=space, query=QUESTION, record_visits=False)
    backends = {side.connection.info.backend_pid for side in side_readers._opened}
    assert backends, "the retrieval opened side connections"
    side_readers.close()
    assert not side_readers._opened
    deadline = time.monotonic() + 5  # a backend leaves pg_stat_activity once its process has exited
    while backends_alive(backends) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not backends_alive(backends)
    assert ranked(retrieve(space=space, query=QUESTION, record_visits=False))


def backends_alive(pids: set[int]) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)])
        return {row[0] for row in cursor.fetchall()}
