"""Retrieval's page channels (vectors, full text) run on side connections beside its other reads, outside a
transaction: the same result as on one connection, which a transaction's retrieval keeps, as does one whose side
read fails. The full-text channel is prepared on its side connection (planned once for any question), unless
MEMORY_PREPARED_READS is off; the vector channel never is."""

from __future__ import annotations

import time
from concurrent.futures import Future
from unittest.mock import patch

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memory.retrieval import rows, search
from memory.retrieval import side_readers as side_reads
from memory.retrieval.channels import lexical_params, lexical_sql, query_terms
from memory.retrieval.rows import vector_text
from memory.retrieval.search import retrieve
from memory.retrieval.side_readers import prepared_rows, side_readers
from memory.services.embedding_state import embedder_for_store
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


def lost_connection(sql, params, **_) -> Future:
    failed = Future()
    failed.set_exception(ConnectionError("side connection lost"))
    return failed


def shutting_down(sql, params, **_) -> Future:
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


def prepared_reads(space) -> list[str]:
    """What the side readers prepared during one retrieval: each prepared statement's channel."""
    seen: list[str] = []

    def spy(side, sql, params):
        seen.extend(channels(sql) or {"other"})
        return prepared_rows(side, sql, params)

    with patch.object(side_reads, "prepared_rows", spy):
        retrieve(space=space, query=QUESTION, record_visits=False)
    return seen


def test_the_words_channel_alone_is_prepared_on_its_side_connection(space):
    assert prepared_reads(space) == ["words"], "the vector channel's generic plan is far slower: never prepared"


def test_with_prepared_reads_off_nothing_is_prepared_and_the_result_is_the_same(space, settings):
    prepared = ranked(retrieve(space=space, query=QUESTION, record_visits=False))
    settings.MEMORY_PREPARED_READS = False
    assert prepared_reads(space) == []
    assert ranked(retrieve(space=space, query=QUESTION, record_visits=False)) == prepared


@pytest.mark.parametrize("question", [QUESTION, "band", "the wedding", "curry lunch garage song played"])
def test_a_prepared_words_statement_finds_what_it_finds_unprepared_run_after_run(space, question):
    sql, params = words_statement(space, question)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        unprepared = cursor.fetchall()
    before = words_plans_used()
    runs = [prepared_rows(connection, sql, params) for _ in range(7)]  # past PostgreSQL's five custom plans
    assert unprepared and all(run == unprepared for run in runs)
    assert words_plans_used() == before + 7, "prepared on this connection, each run from a plan of it"


def words_statement(space, question: str) -> tuple[str, dict]:
    """The full-text channel's statement for `question`, as retrieval sends it."""
    terms = query_terms(question)
    vector = vector_text(embedder_for_store().embed([question])[0])
    return lexical_sql(len(terms)), lexical_params(space, terms, vector)


def words_plans_used() -> int:
    """How many times this connection's prepared full-text statements were run from a plan (custom or generic)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%ts_rank_cd%"],
        )
        return cursor.fetchone()[0]


def test_a_server_that_loses_prepared_statements_turns_preparing_off_and_retrieval_reads_on(space, monkeypatch):
    monkeypatch.setattr(side_readers, "preparing", True)  # put back after the test
    expected = ranked(retrieve(space=space, query=QUESTION, record_visits=False))
    sql, params = words_statement(space, QUESTION)
    try:
        prepared_rows(connection, sql, params)
        connection.connection.pgconn.exec_(b"DEALLOCATE ALL")  # as a pooler does that hands over another server
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            prepared_rows(connection, sql, params)
    finally:
        connection.close()  # psycopg still names the lost statement on this connection
    assert side_readers.preparing is False
    assert prepared_reads(space) == []
    assert ranked(retrieve(space=space, query=QUESTION, record_visits=False)) == expected


def test_with_server_side_binding_nothing_is_prepared(space, monkeypatch):
    # psycopg would then prepare any statement run five times on the side connection, the vector channel's too
    monkeypatch.setitem(
        connection.settings_dict, "OPTIONS", {**connection.settings_dict["OPTIONS"], "server_side_binding": True}
    )
    assert prepared_reads(space) == []


def test_the_claims_of_short_term_turns_are_read_before_the_channels_rows_are_waited_for(space):
    order: list[str] = []
    with (
        patch.object(search, "claims_read_ahead", lambda texts: order.extend(texts)),
        patch.object(search, "replacements", lambda said: order.append("compared") or {}),
        patch.object(rows.Batch, "run", spied_run(order)),
    ):
        retrieve(space=space, query=QUESTION, record_visits=False)
    first_batch = order[: order.index("first batch read")]
    assert "Lunch was a curry" in first_batch, "read while the page channels were read beside"
    assert order.index("compared") > order.index("first batch read")


def spied_run(order: list[str]):
    run = rows.Batch.run

    def spied(batch, meanwhile=None):
        run(batch, meanwhile)
        if meanwhile is not None:
            order.append("first batch read")

    return spied
