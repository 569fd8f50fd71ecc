"""Large memory imports as background jobs: queued with their bundle, imported by `memory_import_run_task`, with
progress, as exports are built (a worker's lease, renewed by a heartbeat; `attempts` fences a stale worker).

A bundle of more than MEMORY_IMPORT_SYNC_PAGES pages would hold the request past a proxy's or gunicorn's timeout
(960 pages took 40 s): it is checked at once (whatever refuses a bundle is answered to the request), then queued.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from memory.bundles import bundle_fingerprint
from memory.models import EndUser, ImportStatus, MemoryImport
from memory.services.audit import Actor
from memory.services.bundle_import import (
    BundleInvalid,
    ImportRefused,
    ImportResult,
    ImportTakenOver,
    bundle_for_storage,
    held_bundle,
    memory_import,
)
from memory.services.jobs import lease_end, lease_kept
from memory.services.personal_data import storage_redactor
from memory.services.turns import EndUserClosed, end_user_write_lock

log = logging.getLogger(__name__)
REFUSALS = (BundleInvalid, ImportRefused, EndUserClosed)


def import_in_background(bundle: dict) -> bool:
    """Whether the bundle holds more pages than an import in the request may take (MEMORY_IMPORT_SYNC_PAGES).

    Read before validation: a malformed bundle counts what it can (the import refuses it with its first problem).
    """
    spaces = bundle.get("memory") if isinstance(bundle, dict) else None
    if not isinstance(spaces, list):
        return False
    listed = [space.get("pages") for space in spaces if isinstance(space, dict)]
    return sum(len(pages) for pages in listed if isinstance(pages, list)) > settings.MEMORY_IMPORT_SYNC_PAGES


def memory_import_queue(
    *, end_user: EndUser, bundle: dict, actor: Actor, assistant_external_id: str = "", request_id: str = ""
) -> ImportResult:
    """Check `bundle` as a dry run does, then queue its import; `memory_import` is the queued row (status queued).

    Raises what memory_import raises for a bundle it refuses, before anything is queued; a bundle already imported
    for the user queues nothing (`already_imported`). The row holds the bundle with the tenant's do-not-store data
    redacted until the import ends. Under the user's write lock, so an erasure under way deletes the row or
    refuses it (EndUserClosed); the task is queued after commit.
    """
    plan = memory_import(
        end_user=end_user, bundle=bundle, actor=actor, assistant_external_id=assistant_external_id, dry_run=True
    )
    if plan.already_imported:
        return plan
    stored = bundle_for_storage(bundle, redact=storage_redactor(tenant=end_user.tenant_id))
    with transaction.atomic():
        end_user_write_lock(end_user)
        plan.memory_import = MemoryImport.objects.create(
            tenant_id=end_user.tenant_id, end_user=end_user, fingerprint=bundle_fingerprint(stored),
            status=ImportStatus.QUEUED, bundle=stored, assistant_external_id=assistant_external_id,
            requested_by=actor.label[:200], actor={"kind": actor.kind, "id": actor.id, "label": actor.label},
            request_id=request_id[:64], lease_until=lease_end(timezone.now()),
        )  # fmt: skip
        _queue(plan.memory_import.pk)
    return plan


def memory_import_staged_queue(*, staged: MemoryImport, actor: Actor, request_id: str = "") -> MemoryImport | None:
    """Queue the import of a bundle a console dry run staged (checked again first, as memory_import_queue does).

    Raises what memory_import raises for a bundle it now refuses; the staged row stays then. Returns the queued
    row, or None when the bundle was already imported for the user (the staged copy is dropped) or was confirmed
    meanwhile by another request.
    """
    end_user = staged.end_user
    plan = memory_import(
        end_user=end_user, bundle=held_bundle(staged), actor=actor, assistant_external_id=staged.assistant_external_id,
        dry_run=True,
    )  # fmt: skip
    rows = MemoryImport.objects.filter(pk=staged.pk, status=ImportStatus.STAGED)
    with transaction.atomic():
        end_user_write_lock(end_user)
        if plan.already_imported:
            rows.delete()
            return None
        queued = rows.update(
            status=ImportStatus.QUEUED, requested_by=actor.label[:200], request_id=request_id[:64],
            actor={"kind": actor.kind, "id": actor.id, "label": actor.label}, lease_until=lease_end(timezone.now()),
        )  # fmt: skip
        if queued:
            _queue(staged.pk)
    return MemoryImport.objects.get(pk=staged.pk) if queued else None


def _queue(import_id: int) -> None:
    from memory.tasks import memory_import_run_task

    transaction.on_commit(lambda: memory_import_run_task.delay(import_id))


def _claim(import_id: int) -> MemoryImport | None:
    """Claim a queued import, or a running one whose worker's lease ran out; None when there is nothing to run."""
    now = timezone.now()
    claimable = Q(status=ImportStatus.QUEUED) | Q(status=ImportStatus.RUNNING, lease_until__lt=now)
    claimed = (
        MemoryImport.objects.filter(claimable, pk=import_id)
        .update(status=ImportStatus.RUNNING, progress=10, attempts=F("attempts") + 1, lease_until=lease_end(now))
    )  # fmt: skip
    return MemoryImport.objects.select_related("end_user").get(pk=import_id) if claimed else None


@dataclass
class _Heartbeat:
    """The lease and the last progress heard, written from the heartbeat's own connection (the import's
    transaction shows nothing until it commits)."""

    job: MemoryImport
    percent: int = 10

    def heard(self, percent: int) -> None:
        self.percent = percent

    def beat(self) -> None:
        MemoryImport.objects.filter(pk=self.job.pk, status=ImportStatus.RUNNING, attempts=self.job.attempts).update(
            progress=self.percent, lease_until=lease_end(timezone.now())
        )


def memory_import_run(*, import_id: int) -> MemoryImport | None:
    """Import a queued bundle: the row becomes the done record in the import's transaction, or failed with why.

    Idempotent: a row done, failed, gone, or running under another worker's live lease is left alone (None); one
    whose worker died is run again by one worker only, and a worker whose lease was taken over stores nothing.
    """
    job = _claim(import_id)
    if job is None:
        return None
    heartbeat = _Heartbeat(job)
    try:
        with lease_kept(heartbeat.beat):
            result = memory_import(
                end_user=job.end_user, bundle=held_bundle(job), actor=Actor(**job.actor),
                assistant_external_id=job.assistant_external_id, request_id=job.request_id, job=job,
                progress=heartbeat.heard,
            )  # fmt: skip
    except ImportTakenOver:
        return None
    except REFUSALS as exc:  # the bundle or the user changed since it was queued
        return _failed(job, f"Not imported: {exc}.")
    except Exception as exc:  # any other failure must end in a visible failed import, not a stuck one
        log.exception("memory import %s failed", import_id)
        return _failed(job, f"The import failed: {exc}")
    if result.already_imported:
        return _failed(job, "This bundle was already imported for this user; nothing changed.")
    return result.memory_import


def _failed(job: MemoryImport, error: str) -> MemoryImport | None:
    """Mark the import failed and drop its bundle (personal data kept for nothing); the caller may send it again."""
    failed = MemoryImport.objects.filter(pk=job.pk, status=ImportStatus.RUNNING, attempts=job.attempts).update(
        status=ImportStatus.FAILED, bundle=None, error=error[:2000], lease_until=None
    )
    return MemoryImport.objects.get(pk=job.pk) if failed else None
