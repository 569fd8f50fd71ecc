"""Durable state of background memory jobs: a lease per job, claimed with a conditional write, renewed while the
work runs, cleared in the work's own transaction; `jobs_requeue` (beat, every minute) queues again what is left.

The broker only carries wake-up calls. What is left to do lives in the database: pending pages (placement), a
`JobLease` row per hot segment to promote, and the export jobs themselves. A worker that dies, or a message that
the broker loses, costs at most a lease (JOB_LEASE_SECONDS) plus a sweep interval; a redelivered or requeued task
finds the lease held or the work done and does nothing twice.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max, Q
from django.utils import timezone

from memory.models import (
    ExportJob,
    ImportStatus,
    JobKind,
    JobLease,
    JobStatus,
    MemoryImport,
    Page,
    ProfileVersion,
    SegmentVisit,
)

# Back-off after a failed run, by attempt (the same schedule as the tasks' retries): the sweep waits as long.
RETRY_DELAYS = (10, 60, 300, 900, 3600)
EXPORT_MAX_ATTEMPTS = 3  # an export that killed its worker this often fails for good instead of looping


@dataclass(frozen=True)
class Lease:
    """A claim on one job; `token` fences the writes of a worker whose lease was taken over."""

    kind: str
    target_id: int
    token: str


def lease_end(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.JOB_LEASE_SECONDS)


def job_claim(*, kind: str, target_id: int, now: datetime | None = None) -> Lease | None:
    """Claim a job if nobody holds it or its lease expired (autocommitted, before the work's transaction).

    When another worker holds it, ask that worker to run once more (`rerun`) and return None: the holder's run
    may have started before this task's work arrived.
    """
    for _ in range(2):  # the holder may finish between our claim and our request; then claim again
        at = now or timezone.now()
        JobLease.objects.get_or_create(kind=kind, target_id=target_id, defaults={"lease_until": at})
        token = secrets.token_hex(16)
        claimed = (
            JobLease.objects.filter(kind=kind, target_id=target_id)
            .filter(Q(token="") | Q(lease_until__lt=at))
            .update(token=token, lease_until=lease_end(at), attempts=F("attempts") + 1, rerun=False)
        )
        if claimed:
            return Lease(kind=kind, target_id=target_id, token=token)
        if JobLease.objects.filter(kind=kind, target_id=target_id).exclude(token="").update(rerun=True):
            return None
    return None


def job_done(lease: Lease) -> bool:
    """Clear the job inside the work's transaction, so the job and its result commit together.

    Returns whether another task asked for a rerun meanwhile. Locks the row: a concurrent rerun request waits for
    this transaction, finds no row and claims the job itself.
    """
    row = JobLease.objects.select_for_update().filter(kind=lease.kind, target_id=lease.target_id, token=lease.token)
    rerun = bool(row.filter(rerun=True).exists())
    row.delete()
    return rerun


def job_release(lease: Lease, *, now: datetime | None = None) -> None:
    """After a failed run: let any task claim the job again; the sweep waits for the retry back-off first."""
    now = now or timezone.now()
    row = JobLease.objects.filter(kind=lease.kind, target_id=lease.target_id, token=lease.token)
    attempts = row.values_list("attempts", flat=True).first() or 1
    delay = RETRY_DELAYS[min(attempts, len(RETRY_DELAYS)) - 1]
    row.update(token="", lease_until=now + timedelta(seconds=delay))


def job_forget(*, kind: str, target_id: int) -> None:
    """Drop a job whose target is gone (a segment evicted or erased before its promotion ran)."""
    JobLease.objects.filter(kind=kind, target_id=target_id).delete()


def jobs_due(*, kind: str, target_ids: Iterable[int], now: datetime | None = None) -> None:
    """Record jobs to do (in the caller's transaction); the sweep queues any whose message gets lost."""
    until = lease_end(now or timezone.now())
    rows = [JobLease(kind=kind, target_id=target_id, lease_until=until) for target_id in target_ids]
    JobLease.objects.bulk_create(rows, ignore_conflicts=True)


def job_renew(lease: Lease) -> bool:
    """Extend the lease, skipping a row the work's transaction has locked (it is being cleared)."""
    table = JobLease._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET lease_until = %s WHERE id = (SELECT id FROM {table} "
            "WHERE kind = %s AND target_id = %s AND token = %s FOR UPDATE SKIP LOCKED)",
            [lease_end(timezone.now()), lease.kind, lease.target_id, lease.token],
        )
        return cursor.rowcount > 0


@contextmanager
def lease_kept(renew: Callable[[], object]) -> Iterator[None]:
    """Renew a lease every third of JOB_LEASE_SECONDS from a thread (with its own connection) while the body runs.

    The body may hold one long transaction (placement and promotion do), whose writes nobody sees before it
    commits; the heartbeat commits on its own. A killed worker stops renewing, and its lease runs out.
    """
    stopped = threading.Event()

    def beat() -> None:
        try:
            while not stopped.wait(settings.JOB_LEASE_SECONDS / 3):
                renew()
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name="lease-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join()


# --- The sweep --------------------------------------------------------------------------------------------------


def jobs_requeue(*, now: datetime | None = None) -> dict[str, int]:
    """Queue again every job whose lease expired or whose message never came; returns how many, by kind."""
    now = now or timezone.now()
    return {
        JobKind.PLACEMENT: _placements_requeue(now),
        JobKind.PROMOTION: _promotions_requeue(now),
        JobKind.REDERIVE: _rederivations_requeue(now),
        "export": _exports_requeue(now),
        "import": _imports_requeue(now),
        "visits": _visits_requeue(now),
    }


def _imports_requeue(now: datetime) -> int:
    """Background imports whose message was lost (queued past their lease) or whose worker died (running past it)."""
    from memory.tasks import memory_import_run_task

    stale = Q(status=ImportStatus.QUEUED) | Q(status=ImportStatus.RUNNING)
    ids = list(MemoryImport.objects.filter(stale, lease_until__lt=now).values_list("pk", flat=True))
    for import_id in ids:
        MemoryImport.objects.filter(pk=import_id, status=ImportStatus.QUEUED).update(lease_until=lease_end(now))
        transaction.on_commit(partial(memory_import_run_task.delay, import_id))
    return len(ids)


def _placements_requeue(now: datetime) -> int:
    """Spaces with evicted pages unplaced for longer than a lease, and no live placement lease."""
    from memory.tasks import pages_place_task

    live = JobLease.objects.filter(kind=JobKind.PLACEMENT, lease_until__gte=now).values("target_id")
    newest = (
        Page.objects.waiting_placement()
        .filter(created_at__lt=now - _lease())
        .exclude(space_id__in=live)
        .values("space_id")
        .annotate(newest=Max("id"))
        .values_list("space_id", "newest")
    )
    rows = list(newest)
    pending_spaces = Page.objects.waiting_placement().values("space_id")
    # A dead holder's claim on a space with nothing left to place (its pages placed since, or the space erased)
    JobLease.objects.filter(kind=JobKind.PLACEMENT, lease_until__lt=now).exclude(target_id__in=pending_spaces).delete()
    for space_id, page_id in rows:
        _requeued(JobKind.PLACEMENT, space_id, now)
        transaction.on_commit(partial(pages_place_task.delay, page_id))
    return len(rows)


def _promotions_requeue(now: datetime) -> int:
    from memory.tasks import segment_promote_task

    segment_ids = list(
        JobLease.objects.filter(kind=JobKind.PROMOTION, lease_until__lt=now).values_list("target_id", flat=True)
    )
    for segment_id in segment_ids:
        _requeued(JobKind.PROMOTION, segment_id, now)
        transaction.on_commit(partial(segment_promote_task.delay, segment_id))
    return len(segment_ids)


def _rederivations_requeue(now: datetime) -> int:
    """Stale profiles whose re-derivation lease expired (a dead worker, a lost message), and any stale profile
    with no job at all (marked before jobs were recorded)."""
    from memory.tasks import profile_rederive_task

    jobs = JobLease.objects.filter(kind=JobKind.REDERIVE)
    untracked = ProfileVersion.objects.filter(stale=True).exclude(end_user_id__in=jobs.values("target_id"))
    expired = jobs.filter(lease_until__lt=now).values_list("target_id", flat=True)
    end_user_ids = sorted(set(expired) | set(untracked.values_list("end_user_id", flat=True)))
    for end_user_id in end_user_ids:
        _requeued(JobKind.REDERIVE, end_user_id, now)
        transaction.on_commit(partial(profile_rederive_task.delay, end_user_id))
    return len(end_user_ids)


def _visits_requeue(now: datetime) -> int:
    """Wake a worker for segment visits queued longer than a lease ago (their wake-up message was lost)."""
    from memory.tasks import segment_visits_count_task

    waiting = SegmentVisit.objects.filter(at__lt=now - _lease()).exists()
    if waiting:
        transaction.on_commit(segment_visits_count_task.delay)
    return int(waiting)


def _requeued(kind: str, target_id: int, now: datetime) -> None:
    """Give up the dead holder's claim and give the new message a lease's time before the next requeue."""
    JobLease.objects.update_or_create(
        kind=kind, target_id=target_id, defaults={"token": "", "lease_until": lease_end(now), "rerun": False}
    )


def _exports_requeue(now: datetime) -> int:
    """Exports whose worker died (retrying, or failed past EXPORT_MAX_ATTEMPTS) or whose message was lost."""
    from memory.tasks import export_build_task

    stuck = ExportJob.objects.filter(
        status__in=(JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.RETRYING), lease_until__lt=now
    )
    stuck.filter(status=JobStatus.RUNNING, attempts__gte=EXPORT_MAX_ATTEMPTS).update(
        status=JobStatus.FAILED,
        error=f"the export was interrupted {EXPORT_MAX_ATTEMPTS} times; request a new one",
        finished_at=now,
        lease_until=None,
    )
    job_ids = list(stuck.values_list("pk", flat=True))
    stuck.filter(pk__in=job_ids, status=JobStatus.RUNNING).update(status=JobStatus.RETRYING)
    ExportJob.objects.filter(pk__in=job_ids).update(lease_until=lease_end(now))
    for job_id in job_ids:
        transaction.on_commit(partial(export_build_task.delay, job_id))
    return len(job_ids)


def _lease() -> timedelta:
    return timedelta(seconds=settings.JOB_LEASE_SECONDS)
