"""Visits: a segment is visited when a page it supplied reached a reply (or a retrieval's result) as relevant to the
question. Recording one queues a row (`retrieval_visits_record`, `segment_visits_queue`); the worker counts the queue
into each segment's N_visit, last touch and heat history (`segment_visits_apply`, run by updating.segment_visits_count).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from memory.heat import heat_of
from memory.models import HeatSample, Segment, SegmentVisit
from memory.models.tiers import HeatEvent
from memory.retrieval.result import RetrievalResult
from memory.retrieval.side_readers import several_statements_per_execute
from memory.services.heat_samples import sample_fields

log = logging.getLogger(__name__)

VISITS_BATCH = 1_000
# Held in the cache for MEMORY_VISITS_WAKE_SECONDS by the retrieval that woke the worker: the rest find it and
# send nothing, their visits being counted by that wake-up.
VISITS_WAKE_KEY = "memory:visits-wake"
# The visit rows of segments that still exist, in one INSERT … SELECT.
QUEUE_SQL = "INSERT INTO {visit} (segment_id, at) SELECT id, %s FROM {segment} WHERE id = ANY(%s) RETURNING segment_id"
# For this transaction only: its commit returns before the write-ahead log is flushed to disk.
ASYNCHRONOUS_COMMIT_SQL = "SET LOCAL synchronous_commit = off"
# One statement takes a batch of queued visits and counts them into their segments, returning the counters as
# updated, so the samples need no second read. The batch is chosen once (`batch`, materialised): as a subquery of
# the DELETE a plan could run it again for every row (a nested-loop semi-join), and each run, skipping the rows
# the DELETE had just removed, locked the next ones, so one "batch" took the whole queue.
APPLY_SQL = """
WITH batch AS MATERIALIZED (
    SELECT id FROM {visit} ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
), taken AS (
    DELETE FROM {visit} WHERE id IN (SELECT id FROM batch)
    RETURNING segment_id, at
), visits AS (
    SELECT segment_id, count(*) AS n, max(at) AS at FROM taken GROUP BY segment_id
)
UPDATE {segment} AS s SET n_visit = s.n_visit + visits.n, last_touched_at = greatest(s.last_touched_at, visits.at)
FROM visits WHERE s.id = visits.segment_id
RETURNING s.id, s.space_id, s.n_visit, s.l_interaction, s.last_touched_at, visits.n
"""


def retrieval_visits_record(*, result: RetrievalResult, now: datetime, page_ids: set[int] | None = None) -> list[int]:
    """Queue a visit to each segment that supplied a page of `result` relevant to its question, among `page_ids`
    (those that reached a prompt) or every page found; the segments queued go to `result.visited_segment_ids` and are
    returned. The one way retrieval and the chat record visits."""
    result.visited_segment_ids = segment_visits_queue(segment_ids=result.relevant_segment_ids(page_ids), now=now)
    return result.visited_segment_ids


def segment_visits_queue(*, segment_ids: Iterable[int], now: datetime) -> list[int]:
    """Queue one visit at `now` to each segment (one INSERT) and, once it commits, see that the worker is woken
    (`visits_worker_wake`); `segment_visits_apply` counts them. Segments deleted meanwhile are skipped; returns the
    ids queued, ascending.

    Inside the caller's transaction (a chat turn) the visits commit with it. Called on its own (a retrieval through
    the API) the INSERT is sent in one round trip behind `SET LOCAL synchronous_commit = off`, the two forming one
    implicit transaction whose commit does not wait for the write-ahead log to reach the disk: a visit is a usage
    signal, and a crash of the database server in the next fraction of a second loses those visits whole (never
    part of one, and nothing else; PostgreSQL's asynchronous commit keeps the database consistent), while the
    request no longer waits on a disk flush (see docs/decisions/0012-visits-off-the-request-path.md). A database
    configured with `server_side_binding` takes one statement per execute, and waits.
    """
    ids = sorted(set(segment_ids))
    if not ids:
        return []
    sql = QUEUE_SQL.format(visit=SegmentVisit._meta.db_table, segment=Segment._meta.db_table)
    asynchronous = not connection.in_atomic_block and several_statements_per_execute()
    with connection.cursor() as cursor:
        if asynchronous:
            cursor.execute(f"{ASYNCHRONOUS_COMMIT_SQL}; {sql}", [now, ids])
            cursor.nextset()
        else:
            cursor.execute(sql, [now, ids])
        queued = sorted(row[0] for row in cursor.fetchall())
    if queued:
        transaction.on_commit(visits_worker_wake)
    return queued


def visits_worker_wake() -> None:
    """Wake the worker to count the queued visits, at most once per MEMORY_VISITS_WAKE_SECONDS however many
    retrievals queue them (0, or tasks run eagerly: at every call).

    The first call of an interval takes a cache key for the interval and sends the task to run when the interval
    ends; a later call finds the key and sends nothing, its visits (committed before it looked) waiting for that
    run, which takes every visit queued by then. A broker message and a worker transaction per retrieval become one
    per interval: visits are counted up to that much later. A lost message, or a worker clock running ahead, leaves
    visits for the next wake-up or the minute's sweep (`jobs._visits_requeue`). With the cache unreachable the
    worker is woken at once, as without coalescing.
    """
    from memory.tasks import segment_visits_count_task

    interval = settings.MEMORY_VISITS_WAKE_SECONDS
    if interval <= 0 or segment_visits_count_task.app.conf.task_always_eager:  # eager: it runs now, not at the end
        segment_visits_count_task.delay()
        return
    try:
        first = cache.add(VISITS_WAKE_KEY, True, timeout=interval)
    except Exception:  # the cache is an optimisation here: without it, wake the worker as before
        log.warning("the cache could not coalesce visit wake-ups; waking the worker at once", exc_info=True)
        segment_visits_count_task.delay()
        return
    if first:
        segment_visits_count_task.apply_async(countdown=interval)


def segment_visits_apply(*, batch: int = VISITS_BATCH, visited: dict[int, set[int]] | None = None) -> int:
    """Count the queued visits: per segment N_visit += visits, last touch = the latest visit, one heat sample.

    Each batch takes its visit rows and updates their segments in one statement of one transaction, so a batch is
    counted exactly once even when two workers run this at once (SKIP LOCKED) or a worker dies half-way (nothing of
    the batch commits). Returns the number of visits counted; `visited`, when given, collects the segments counted
    by space (space id → segment ids).
    """
    visited = {} if visited is None else visited
    counted = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(APPLY_SQL.format(visit=SegmentVisit._meta.db_table, segment=Segment._meta.db_table), [batch])
            rows = sorted(cursor.fetchall())
            HeatSample.objects.bulk_create(_visit_sample(row) for row in rows)
        for segment_id, space_id, *_ in rows:
            visited.setdefault(space_id, set()).add(segment_id)
        taken = sum(row[-1] for row in rows)  # visits, not segments: a segment's visits are counted together
        counted += taken
        if taken < batch:  # the queue held less than a batch: nothing is left
            return counted


def _visit_sample(row: tuple[int, int, int, int, datetime, int]) -> HeatSample:
    """The unsaved sample of a segment just visited, from its updated counters, at its last visit."""
    segment_id, space_id, n_visit, l_interaction, at, _ = row
    heat = heat_of(n_visit=n_visit, l_interaction=l_interaction, last_touched_at=at, now=at)
    fields = sample_fields(segment_id=segment_id, space_id=space_id, heat=heat, event=HeatEvent.VISITED, now=at)
    return HeatSample(**fields)
