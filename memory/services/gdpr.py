"""GDPR erasure, with a receipt that stays; what is held about an end user (the export, the dry run's counts) is read
by memory.selectors.gdpr."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import OperationalError, transaction
from django.utils import timezone

from memory.models import (
    EndUser,
    ErasureReceipt,
    ExportJob,
    JobStatus,
    MemorySpace,
    Tenant,
)
from memory.selectors.gdpr import (
    account_live_sessions,
    end_user_rows,
    erasure_counts,
    subject_reference,
    subject_reference_of,
)
from memory.services.audit import Actor, audit_record, audit_tombstone_actor, audit_tombstone_subject
from memory.services.legal_hold import legal_hold_check
from memory.services.tenancy import end_user_create
from memory.services.turns import EndUserClosed
from memory.services.webhook_events import USER_ERASED, webhook_event_emit, webhook_events_erase

# --- Erasure --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Erasure:
    counts: dict[str, int]
    receipt: ErasureReceipt | None


def _receipt_hash(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def end_user_for_turn(*, tenant: Tenant, external_id: str) -> EndUser:
    """The end user a turn or chat names, created on first use; an erased one is refused, never brought back.

    Integrations create end users implicitly; a turn in flight (or replayed) after an erasure must not recreate
    the user and store their words again. Raises EndUserClosed(erased=True) for an external id with an erasure
    receipt; an operator may still create the user again explicitly (end_user_create).
    """
    existing = EndUser.objects.filter(tenant=tenant, external_id=external_id).first()
    if existing is not None:
        return existing
    ref = subject_reference_of(tenant_id=tenant.pk, external_id=external_id)
    if ErasureReceipt.objects.filter(tenant=tenant, subject_ref=ref).exists():
        raise EndUserClosed(erased=True)
    return end_user_create(tenant=tenant, external_id=external_id)


ERASE_ATTEMPTS = 5


def user_erase(*, end_user: EndUser, actor: Actor, legal_basis: str, reason: str = "", dry_run: bool = True) -> Erasure:
    """Delete everything about an end user in every table; audit entries about them keep only tombstones.

    With `dry_run` (the default) nothing changes and the counts say what would go. A real run first deactivates
    the end user and cancels their unfinished exports (committed at once, so new turns, chats and exports are
    refused from then on), then takes the per-user write lock exclusively (the end user, then their memory spaces
    in id order: the order every writer takes them in), waiting for writes already under way, and deletes. It
    ends with an ErasureReceipt (time, actor, legal basis, counts per table, a hash) that stays after the user is
    gone; every export file of the user is deleted after commit. A deadlock with a background task is retried.
    A user under legal hold is not touched: LegalHoldActive, before anything changes.
    """
    if dry_run:
        return Erasure(counts=erasure_counts(end_user=end_user), receipt=None)
    legal_basis = (legal_basis or "").strip()
    if not legal_basis:
        raise ValueError("a legal basis is required to erase an end user")
    _close(end_user)
    for attempt in range(1, ERASE_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return _erase_locked(end_user, actor=actor, legal_basis=legal_basis, reason=reason)
        except OperationalError as exc:
            # A worker that holds a space and then needs the end user's row can deadlock with us; PostgreSQL
            # aborts one side, and since new writes are already refused, trying again wins.
            if getattr(exc.__cause__, "sqlstate", None) not in RETRYABLE or attempt == ERASE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


RETRYABLE = {"40P01", "40001"}  # deadlock_detected, serialization_failure


def _close(end_user: EndUser) -> None:
    """Refuse new writes about the end user from now on: deactivate them and cancel their unfinished exports.

    Under the user's row lock, which placing a legal hold also takes, so a user under hold is never deactivated."""
    with transaction.atomic():
        EndUser.objects.select_for_update().filter(pk=end_user.pk).values_list("pk", flat=True).first()
        legal_hold_check(end_user=end_user, action="erasure")
        EndUser.objects.filter(pk=end_user.pk).update(is_active=False)
        ExportJob.objects.filter(end_user=end_user, status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).update(
            status=JobStatus.FAILED,
            error="cancelled: the end user is being erased",
            finished_at=timezone.now(),
            lease_until=None,
        )


def _lock(end_user: EndUser) -> None:
    """The per-user write lock, exclusively: the end user's row, then their memory spaces in id order."""
    EndUser.objects.select_for_update().filter(pk=end_user.pk).values_list("pk", flat=True).first()
    list(MemorySpace.objects.select_for_update().filter(end_user=end_user).order_by("id").values_list("pk", flat=True))


def _files_delete(paths: Iterable[Path]) -> None:
    """Delete each file that is still there (after the transaction that forgot it commits)."""
    for path in paths:
        path.unlink(missing_ok=True)


def _export_files(end_user: EndUser) -> list[Path]:
    """Every export file of the user: those recorded on their jobs, and any a running build may have written."""
    jobs = list(ExportJob.objects.filter(end_user=end_user).values_list("pk", "file_path"))
    folder = Path(settings.EXPORT_DIR) / end_user.tenant.slug
    files = [Path(p) for _, p in jobs if p]
    for job_id, _ in jobs:
        files += [folder / f"export-{job_id}.zip", *folder.glob(f"export-{job_id}.zip.*part")]  # each attempt's
    return files


def _erase_locked(end_user: EndUser, *, actor: Actor, legal_basis: str, reason: str) -> Erasure:
    _lock(end_user)
    legal_hold_check(end_user=end_user, action="erasure")  # placed between closing and locking
    counts = erasure_counts(end_user=end_user)
    tenant, subject_id, account_id, external_id = (
        end_user.tenant,
        end_user.pk,
        end_user.account_id,
        end_user.external_id,
    )
    subject_ref = subject_reference(end_user)
    export_files = _export_files(end_user)
    audit_tombstone_subject(tenant=tenant, subject_id=subject_id)
    audit_tombstone_actor(tenant=tenant, end_user_id=subject_id)
    webhook_events_erase(tenant_id=tenant.pk, subject_id=subject_id)
    for queryset in end_user_rows(end_user=end_user).values():
        queryset.delete()
    if account_id:
        Session.objects.filter(session_key__in=account_live_sessions(user_id=account_id)).delete()
        get_user_model().objects.filter(pk=account_id).delete()
    transaction.on_commit(partial(_files_delete, export_files))
    receipt = _receipt_create(
        tenant=tenant,
        subject_id=subject_id,
        subject_ref=subject_ref,
        actor=actor,
        legal_basis=legal_basis,
        reason=reason,
        counts=counts,
    )
    audit_record(
        tenant=tenant,
        actor=actor,
        action="gdpr.erasure",
        target_type="erasure_receipt",
        target_id=receipt.pk,
        reason=legal_basis,
        detail={"counts": counts, "receipt_hash": receipt.receipt_hash},
    )
    data = {"user": external_id, "receipt_id": receipt.pk, "subject_ref": subject_ref}
    webhook_event_emit(tenant_id=tenant.pk, type=USER_ERASED, data=data, subject_id=subject_id)
    return Erasure(counts=counts, receipt=receipt)


def _receipt_create(
    *, tenant: Tenant, subject_id: int, subject_ref: str, actor: Actor, legal_basis: str, reason: str, counts: dict
) -> ErasureReceipt:
    created_at = timezone.now()
    fields = {
        "tenant": tenant.slug,
        "subject_ref": subject_ref,
        "actor": f"{actor.kind}:{actor.id}",
        "legal_basis": legal_basis,
        "counts": counts,
        "created_at": created_at.isoformat(),
    }
    receipt = ErasureReceipt.objects.create(
        tenant=tenant,
        subject_id=subject_id,
        subject_ref=subject_ref,
        actor_kind=actor.kind,
        actor_id=actor.id,
        actor_label=actor.label,
        legal_basis=legal_basis,
        reason=reason,
        counts=counts,
        receipt_hash=_receipt_hash(fields),
    )
    ErasureReceipt.objects.filter(pk=receipt.pk).update(created_at=created_at)
    receipt.created_at = created_at
    return receipt


def receipt_verify(receipt: ErasureReceipt) -> bool:
    """Whether the receipt's hash still matches its fields."""
    fields = {
        "tenant": receipt.tenant.slug,
        "subject_ref": receipt.subject_ref,
        "actor": f"{receipt.actor_kind}:{receipt.actor_id}",
        "legal_basis": receipt.legal_basis,
        "counts": receipt.counts,
        "created_at": receipt.created_at.isoformat(),
    }
    return _receipt_hash(fields) == receipt.receipt_hash
