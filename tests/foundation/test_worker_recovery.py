"""SIGKILL a real worker in the middle of a placement, a promotion and an export: a new worker and the sweep
finish each within two minutes of starting, nothing is lost and nothing is done twice.

Each job is held in its middle without touching product code: the test holds, from its own connection, the
space's updating lock (placement and promotion take it after claiming their lease) and a lock on the audit table
(an export reads it after claiming its job). A worker that claimed its job waits there until it is killed.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from memory.models import AuditEntry, ExportJob, JobKind, JobLease, JobStatus, KnowledgeEntry, MemoryEvent, Page
from memory.models.events import EventKind, EventStatus
from memory.services.audit import Actor
from memory.services.gdpr_export import export_request
from memory.services.jobs import jobs_due, jobs_requeue
from memory.services.updating import UPDATING_LOCK_NAMESPACE
from memory.tasks import segment_promote_task
from memoryos_site.database import sqlalchemy_broker_url
from tests import builders
from tests.foundation.processes import child_env, database_url_for_children, publishing_to, stop, wait_for, worker

LEASE = 10  # JOB_LEASE_SECONDS for the workers and this process: a killed worker's lease runs out quickly
RECOVERY = 120  # the promise: each job is finished within two minutes of a new worker starting
CLAIM_TIMEOUT = 60

pytestmark = [
    pytest.mark.worker,
    pytest.mark.slow,
    pytest.mark.real_embedder,  # the workers embed with the real model; the test's own rows must match it
    pytest.mark.django_db(transaction=True),  # the workers see only committed rows
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),  # inside kombu
]


@contextmanager
def held(*, space_ids: list[int]) -> Iterator[psycopg.Connection]:
    """A connection of this test holding the updating lock of each space; closing it releases every lock."""
    holder = psycopg.connect(database_url_for_children())
    try:
        for space_id in space_ids:
            holder.execute("SELECT pg_advisory_lock(%s, %s)", [UPDATING_LOCK_NAMESPACE, space_id % 2_147_483_647])
        yield holder
    finally:
        holder.close()


def audit_table_locked(holder: psycopg.Connection) -> None:
    """Readers of the audit table (an export, after its claim) wait until the holder's transaction ends."""
    holder.execute(f"LOCK TABLE {AuditEntry._meta.db_table} IN ACCESS EXCLUSIVE MODE")


def killed_once_claimed(env: dict, queue: str, log, claimed) -> None:
    """Start a worker, wait until it has claimed its job (and waits on the test's lock), then SIGKILL it."""
    with worker(env=env, queue=queue, log=log) as process:
        assert wait_for(claimed, timeout=CLAIM_TIMEOUT), f"the worker claimed nothing; its log:\n{log.read_text()}"
        stop(process, signal.SIGKILL)
        assert process.returncode == -signal.SIGKILL


def lease_claimed(kind: str, target_id: int):
    return lambda: JobLease.objects.filter(kind=kind, target_id=target_id).exclude(token="").exists()


def test_jobs_of_a_killed_worker_are_finished_by_the_next_once_and_only_once(assistant, settings, tmp_path):
    settings.JOB_LEASE_SECONDS = LEASE
    settings.EXPORT_DIR = tmp_path / "exports"
    env = child_env(
        DATABASE_URL=database_url_for_children(), JOB_LEASE_SECONDS=str(LEASE), EXPORT_DIR=str(tmp_path / "exports")
    )
    queue = f"memoryos-test-{uuid.uuid4().hex[:12]}"
    placing = builders.space_of(builders.end_user(external_id="pat"), assistant)
    promoting = builders.space_of(builders.end_user(external_id="pru"), assistant)
    exported = builders.end_user(external_id="eve")
    hot = builders.segment_with_pages(
        promoting,
        summary="hiking",
        messages=[("I love hiking in the Alps with my dog Rex.", "Dogs love trails.")],
        l_interaction=builders.HOT,
        last_touched_at=timezone.now(),
    )

    with publishing_to(sqlalchemy_broker_url(connection.settings_dict), queue=queue):
        with held(space_ids=[placing.id, promoting.id]) as holder:
            # Queued in this order: a placement (one page past short-term capacity), a promotion, an export.
            builders.turns(placing, messages=[f"I grow tomatoes and beans in my garden, note {n}." for n in range(8)])
            jobs_due(kind=JobKind.PROMOTION, target_ids=[hot.id])  # as placement records a hot segment
            segment_promote_task.delay(hot.id)
            job = export_request(end_user=exported, actor=Actor.system("test"))
            audit_table_locked(holder)

            killed_once_claimed(env, queue, tmp_path / "w1.log", lease_claimed(JobKind.PLACEMENT, placing.id))
            killed_once_claimed(env, queue, tmp_path / "w2.log", lease_claimed(JobKind.PROMOTION, hot.id))
            killed_once_claimed(
                env, queue, tmp_path / "w3.log", lambda: ExportJob.objects.get(pk=job.pk).status == JobStatus.RUNNING
            )
            time.sleep(LEASE + 1)
            stuck = ExportJob.objects.get(pk=job.pk)
            assert stuck.live_status == JobStatus.RETRYING and not stuck.usable_at(timezone.now())

        log = tmp_path / "w4.log"
        with worker(env=env, queue=queue, log=log) as process:
            started = time.monotonic()

            def finished() -> bool:
                jobs_requeue()  # what beat runs every minute
                evicted = Page.objects.get(space=placing, seq=1)
                analysed = not hot.pages.filter(analysed=False).exists()
                return evicted.segment_id is not None and analysed and ExportJob.objects.get(pk=job.pk).status == "done"

            done = wait_for(finished, timeout=RECOVERY, interval=3)
            assert done and process.poll() is None, f"not finished in time; the new worker's log:\n{log.read_text()}"
            assert time.monotonic() - started < RECOVERY

    placed = MemoryEvent.objects.filter(space=placing, kind=EventKind.STM_OVERFLOW, status=EventStatus.OK)
    assert [pid for event in placed for pid in event.detail["placed_page_ids"]] == [
        Page.objects.get(space=placing, seq=1).pk
    ]
    assert Page.objects.filter(space=placing, segment__isnull=False).count() == 1
    promotions = MemoryEvent.objects.filter(kind=EventKind.PROMOTION, status=EventStatus.OK, target_id=hot.id)
    assert promotions.count() == 1
    facts = KnowledgeEntry.objects.filter(end_user=promoting.end_user)
    assert facts.exists() and facts.count() == len(set(facts.values_list("kind", "text_hash")))
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.attempts == 2
    assert [p.name for p in (tmp_path / "exports" / "acme").iterdir()] == [f"export-{job.pk}.zip"]
    assert not JobLease.objects.exists()
