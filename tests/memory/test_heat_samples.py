"""Heat samples: a visit counts once per segment and samples the heat from the counters as updated."""

from __future__ import annotations

from datetime import timedelta
from unittest.mock import patch

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.heat import heat_of
from memory.models import HeatSample, Segment, SegmentVisit
from memory.models.tiers import HeatEvent
from memory.services.visits import (
    ASYNCHRONOUS_COMMIT_SQL,
    VISITS_WAKE_KEY,
    segment_visits_apply,
    segment_visits_queue,
    visits_worker_wake,
)
from memory.tasks import segment_visits_count_task
from tests import builders
from tests.builders import T0
from tests.foundation.processes import child_env, manage

NOW = T0 + timedelta(days=1)


def segment(space, **counters) -> Segment:
    return builders.segment(space, summary="s", keywords=["s"], last_touched_at=T0, **counters)


def test_a_visit_counts_once_per_segment_and_samples_the_updated_counters(space):
    visited, other = segment(space, n_visit=2, l_interaction=5), segment(space)
    assert segment_visits_queue(segment_ids=[visited.id, visited.id], now=NOW) == [visited.id]
    assert segment_visits_apply() == 1
    visited.refresh_from_db()
    assert (visited.n_visit, visited.last_touched_at) == (3, NOW)
    sample = HeatSample.objects.get(segment=visited)
    expected = heat_of(n_visit=3, l_interaction=5, last_touched_at=NOW, now=NOW)
    assert (sample.event, sample.at, sample.space_id) == (HeatEvent.VISITED, NOW, space.id)
    assert (sample.n_visit, sample.l_interaction, sample.r_recency) == (3, 5, 1.0)
    assert sample.heat == pytest.approx(expected.value)
    other.refresh_from_db()
    assert other.n_visit == 0 and not HeatSample.objects.filter(segment=other).exists()


def test_queued_visits_wait_for_the_worker_and_are_counted_exactly_once(space):
    visited = segment(space)
    segment_visits_queue(segment_ids=[visited.id], now=NOW)
    segment_visits_queue(segment_ids=[visited.id], now=NOW + timedelta(hours=1))
    visited.refresh_from_db()
    assert visited.n_visit == 0 and SegmentVisit.objects.count() == 2

    assert segment_visits_apply() == 2
    assert segment_visits_apply() == 0

    visited.refresh_from_db()
    assert (visited.n_visit, visited.last_touched_at) == (2, NOW + timedelta(hours=1))
    assert HeatSample.objects.filter(segment=visited).count() == 1 and not SegmentVisit.objects.exists()


def test_visits_are_counted_in_batches_until_none_are_left(space):
    visited = segment(space)
    for hour in range(5):
        segment_visits_queue(segment_ids=[visited.id], now=NOW + timedelta(hours=hour))
    assert segment_visits_apply(batch=2) == 5
    visited.refresh_from_db()
    assert visited.n_visit == 5 and HeatSample.objects.filter(segment=visited).count() == 3


# Every plan but a nested loop ruled out: the one under which the batch's subquery ran again for every row.
NESTED_LOOP_ONLY = "; ".join(
    f"SET LOCAL enable_{kind} = off" for kind in ("hashjoin", "mergejoin", "material", "hashagg", "sort")
)


def test_a_batch_takes_no_more_visits_than_its_size_whatever_plan_the_database_chooses(space):
    visited = segment(space)
    for hour in range(5):
        segment_visits_queue(segment_ids=[visited.id], now=NOW + timedelta(hours=hour))
    with connection.cursor() as cursor:
        cursor.execute(NESTED_LOOP_ONLY)
    assert segment_visits_apply(batch=2) == 5
    visited.refresh_from_db()
    assert visited.n_visit == 5 and HeatSample.objects.filter(segment=visited).count() == 3


def test_queueing_visits_to_many_segments_takes_one_query_and_wakes_the_worker_on_commit(
    space, django_assert_num_queries, django_capture_on_commit_callbacks
):
    ids = [segment(space).id for _ in range(5)]
    with django_assert_num_queries(1), django_capture_on_commit_callbacks() as callbacks:
        assert segment_visits_queue(segment_ids=reversed(ids), now=NOW) == ids
    assert len(callbacks) == 1


def test_no_segment_no_query_and_a_deleted_segment_is_skipped(space, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert segment_visits_queue(segment_ids=[], now=NOW) == []
    gone, later_gone = segment(space), segment(space)
    Segment.objects.filter(pk=gone.pk).delete()
    assert segment_visits_queue(segment_ids=[gone.id, later_gone.id], now=NOW) == [later_gone.id]
    Segment.objects.filter(pk=later_gone.pk).delete()
    assert segment_visits_apply() == 0
    assert not HeatSample.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_visits_queued_outside_a_transaction_commit_at_once_without_waiting_for_the_disk(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    space = builders.space_of(builders.end_user(tenant="visits"))
    visited = segment(space)
    woken = []
    with (
        CaptureQueriesContext(connection) as queries,
        patch.object(segment_visits_count_task, "delay", lambda: woken.append("after commit")),
    ):
        assert segment_visits_queue(segment_ids=[visited.id], now=NOW) == [visited.id]
    (statement,) = [q["sql"] for q in queries.captured_queries]  # one round trip
    assert statement.startswith(f"{ASYNCHRONOUS_COMMIT_SQL}; INSERT")
    assert not connection.in_atomic_block and woken == ["after commit"]
    assert SegmentVisit.objects.count() == 1
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",), "the setting was for that one commit"
        # what this relies on: statements sent together form one transaction, which SET LOCAL lasts for
        cursor.execute(f"{ASYNCHRONOUS_COMMIT_SQL}; SELECT current_setting('synchronous_commit')")
        cursor.nextset()
        assert cursor.fetchone() == ("off",)


def test_visits_queued_inside_a_transaction_commit_with_it_at_its_durability(space):
    visited = segment(space)
    with CaptureQueriesContext(connection) as queries:
        segment_visits_queue(segment_ids=[visited.id], now=NOW)
    assert ASYNCHRONOUS_COMMIT_SQL not in [q["sql"] for q in queries.captured_queries]


@pytest.mark.django_db(transaction=True)
def test_with_server_side_binding_visits_are_queued_one_statement_at_a_time(settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    space = builders.space_of(builders.end_user(tenant="visits"))
    visited = segment(space)
    monkeypatch.setitem(
        connection.settings_dict, "OPTIONS", {**connection.settings_dict["OPTIONS"], "server_side_binding": True}
    )
    with CaptureQueriesContext(connection) as queries, patch.object(segment_visits_count_task, "delay"):
        assert segment_visits_queue(segment_ids=[visited.id], now=NOW) == [visited.id]
    (statement,) = [q["sql"] for q in queries.captured_queries]
    assert statement.startswith("INSERT") and SegmentVisit.objects.count() == 1


class Wakeups:
    """The wake-up messages sent to the worker, with their countdowns (None: at once)."""

    def __init__(self) -> None:
        self.sent: list[int | None] = []

    def delay(self) -> None:
        self.sent.append(None)

    def apply_async(self, countdown: int) -> None:
        self.sent.append(countdown)


@pytest.fixture
def wakeups(settings):
    """Wake-ups coalesced over 2 seconds, sent to a worker (not run eagerly), recorded instead of sent."""
    settings.MEMORY_VISITS_WAKE_SECONDS = 2
    sent = Wakeups()
    segment_visits_count_task.app.conf.task_always_eager = False  # the autouse celery_eager fixture restores it
    with (
        patch.object(segment_visits_count_task, "delay", sent.delay),
        patch.object(segment_visits_count_task, "apply_async", sent.apply_async),
    ):
        yield sent


def test_retrievals_within_the_interval_wake_the_worker_once_at_its_end(wakeups):
    for _ in range(5):
        visits_worker_wake()
    assert wakeups.sent == [2], "one message, run once the interval has passed"


def test_the_next_interval_wakes_the_worker_again(wakeups, settings):
    visits_worker_wake()
    cache.delete(VISITS_WAKE_KEY)  # the interval is over
    visits_worker_wake()
    assert wakeups.sent == [2, 2]


def test_no_interval_or_eager_tasks_wake_the_worker_at_every_retrieval(wakeups, settings):
    settings.MEMORY_VISITS_WAKE_SECONDS = 0
    visits_worker_wake()
    visits_worker_wake()
    settings.MEMORY_VISITS_WAKE_SECONDS = 2
    segment_visits_count_task.app.conf.task_always_eager = True
    visits_worker_wake()
    assert wakeups.sent == [None, None, None]


def test_an_unreachable_cache_wakes_the_worker_at_once(wakeups, caplog):
    with patch.object(cache, "add", side_effect=ConnectionError("cache down")):
        visits_worker_wake()
    assert wakeups.sent == [None] and "waking the worker at once" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_visits_queued_while_a_wake_up_is_pending_are_counted_by_it(wakeups):
    space = builders.space_of(builders.end_user(tenant="visits"))
    visited = segment(space)
    segment_visits_queue(segment_ids=[visited.id], now=NOW)
    segment_visits_queue(segment_ids=[visited.id], now=NOW + timedelta(seconds=1))
    assert wakeups.sent == [2] and SegmentVisit.objects.count() == 2
    assert segment_visits_apply() == 2, "the one run counts both"


@pytest.mark.slow
def test_a_wake_up_interval_past_a_minute_is_refused_at_start():
    result = manage("check", env=child_env(MEMORY_VISITS_WAKE_SECONDS="61"))
    assert result.returncode != 0
    assert "MEMORY_VISITS_WAKE_SECONDS must be between 0 and 60" in result.stderr
