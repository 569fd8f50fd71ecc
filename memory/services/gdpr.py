"""GDPR: everything held about one end user (access/portability), and erasure with a receipt that stays."""

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
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from memory.models import (
    AuditEntry,
    ChatReply,
    EndUser,
    ErasureReceipt,
    ExportJob,
    HeatSample,
    IdempotentRequest,
    JobStatus,
    KnowledgeEntry,
    LegalHold,
    MemoryEvent,
    MemoryImport,
    MemorySpace,
    Page,
    PagePassage,
    ProfileVersion,
    Segment,
    Tenant,
)
from memory.services.audit import Actor, audit_record, audit_tombstone_actor, audit_tombstone_subject
from memory.services.legal_hold import legal_hold_check
from memory.services.tenancy import end_user_create
from memory.services.turns import EndUserClosed
from memory.services.webhook_events import USER_ERASED, webhook_event_emit, webhook_events_erase

EXPORT_FORMAT = "memoryos-export/1"
# The version of export.json's JSON schema (memory/schemas/memory-bundle-1.schema.json, docs/memory-bundle.md):
# raised when a field changes meaning or disappears; new optional fields keep it.
EXPORT_SCHEMA_VERSION = 1


def _iso(value) -> str | None:
    return value.isoformat() if value else None


_PASSAGES = Prefetch("passages", queryset=PagePassage.objects.order_by("start"))


def _page(page: Page) -> dict:
    return {
        "id": page.id,
        "seq": page.seq,
        "at": _iso(page.at),
        "tier": page.tier,
        "user_message": page.user_message,
        "assistant_reply": page.assistant_reply,
        "segment_id": page.segment_id,
        "previous_page_id": page.prev_page_id,
        "chain_summary": page.chain_summary,
        "topic_summary": page.topic_summary,
        "keywords": page.keywords,
        "analysed": page.analysed,
        "pinned": page.pinned,
        "withheld": page.withheld,
        "valid_to": _iso(page.valid_to),
        "outdated_note": page.outdated_note,
        "source": page.source,
        "reply_source": page.reply_source,
        "embedding": None if page.embedding is None else [float(x) for x in page.embedding],
        "passages": [_passage(passage) for passage in page.passages.all()],
    }


def _passage(passage: PagePassage) -> dict:
    """Where a long page's passage lies in "User: <message>\nAssistant: <reply>", and its vector to four decimals
    (a unit vector's coordinates move the cosine by at most 0.001 so): a 50,000-character page has about 70
    passages, and their full-precision vectors would make it ten times its size in an export."""
    return {"start": passage.start, "end": passage.end, "embedding": [round(float(x), 4) for x in passage.embedding]}


def _segment(segment: Segment, samples: list[HeatSample]) -> dict:
    return {
        "id": segment.id,
        "summary": segment.summary,
        "keywords": segment.keywords,
        "n_visit": segment.n_visit,
        "l_interaction": segment.l_interaction,
        "last_touched_at": _iso(segment.last_touched_at),
        "pinned": segment.pinned,
        "locked": segment.locked,
        "created_at": _iso(segment.created_at),
        "heat_history": [
            {
                "at": _iso(s.at),
                "event": s.event,
                "n_visit": s.n_visit,
                "l_interaction": s.l_interaction,
                "r_recency": s.r_recency,
                "heat": s.heat,
            }
            for s in samples
        ],
    }


def _space(space: MemorySpace) -> dict:
    samples: dict[int, list[HeatSample]] = {}
    for sample in HeatSample.objects.filter(space=space).order_by("at", "id"):
        samples.setdefault(sample.segment_id, []).append(sample)
    return {
        "assistant": {"external_id": space.assistant.external_id, "name": space.assistant.name},
        "memory_paused": space.paused,
        "pages": [_page(p) for p in Page.objects.filter(space=space).prefetch_related(_PASSAGES).order_by("seq")],
        "segments": [_segment(s, samples.get(s.id, [])) for s in Segment.objects.filter(space=space).order_by("id")],
        "replies": [
            {
                "at": _iso(r.created_at),
                "status": r.status,
                "user_message": r.user_message,
                "page_id": r.page_id,
                "memory_used": r.memory_used,
                "llm_calls": r.llm_calls,
            }
            for r in ChatReply.objects.filter(space=space).order_by("created_at")
        ],
    }


def user_export_data(*, end_user: EndUser) -> dict:
    """Every tier of one end user's memory, with heat history, profile versions, knowledge, pins and audit entries.

    Read-only; JSON-ready. Embeddings are included (they are personal data too).
    """
    spaces = MemorySpace.objects.filter(end_user=end_user).select_related("assistant").order_by("id")
    knowledge = KnowledgeEntry.objects.filter(end_user=end_user).select_related("assistant").order_by("id")
    return {
        "format": EXPORT_FORMAT,
        "schema_version": EXPORT_SCHEMA_VERSION,
        "generated_at": _iso(timezone.now()),
        "end_user": {
            "external_id": end_user.external_id,
            "display_name": end_user.display_name,
            "email": end_user.email,
            "tenant": end_user.tenant.slug,
            "created_at": _iso(end_user.created_at),
            "last_active_at": _iso(end_user.last_active_at),
        },
        "memory": [_space(space) for space in spaces],
        "profile_versions": [
            {
                "number": v.number,
                "text": v.text,
                "author": v.author,
                "locked": v.locked,
                "review_state": v.review_state,
                "created_at": _iso(v.created_at),
            }
            for v in ProfileVersion.objects.filter(end_user=end_user).order_by("number")
        ],
        "knowledge": [
            {
                "id": k.id,
                "kind": k.kind,
                "assistant": k.assistant.external_id if k.assistant else None,
                "text": k.text,
                "pinned": k.pinned,
                "locked": k.locked,
                "review_state": k.review_state,
                "slot": k.slot,
                "valid_from": _iso(k.valid_from),
                "valid_to": _iso(k.valid_to),
                "superseded_by": k.superseded_by_id,  # another fact of this bundle (every fact of the user is in it)
                "outdated_note": k.outdated_note,
                "source_ref": k.source_ref,
                "created_at": _iso(k.created_at),
                "source_page_ids": list(k.source_pages.values_list("id", flat=True)),
            }
            for k in knowledge
        ],
        "audit": [
            {
                "at": _iso(a.created_at),
                "actor": a.actor_kind,
                "actor_label": a.actor_label,
                "action": a.action,
                "target": a.target_type,
                "reason": a.reason,
                "erased": a.erased,
            }
            for a in AuditEntry.objects.filter(tenant_id=end_user.tenant_id, subject_id=end_user.pk).order_by("seq")
        ],
    }


# --- Erasure --------------------------------------------------------------------------------------------------


def _querysets(end_user: EndUser) -> dict[str, QuerySet]:
    """Every row about the end user, by table, in an order that deletes cleanly."""
    spaces = MemorySpace.objects.filter(end_user=end_user)
    return {
        "memory_chatreply": ChatReply.objects.filter(space__in=spaces),
        "memory_heatsample": HeatSample.objects.filter(space__in=spaces),
        "memory_knowledgeentry": KnowledgeEntry.objects.filter(end_user=end_user),
        "memory_profileversion": ProfileVersion.objects.filter(end_user=end_user),
        "memory_pagepassage": PagePassage.objects.filter(space__in=spaces),  # (pages' deletes would take them too)
        "memory_page": Page.objects.filter(space__in=spaces),
        "memory_segment": Segment.objects.filter(space__in=spaces),
        "memory_memoryevent": MemoryEvent.objects.filter(end_user=end_user),
        "memory_idempotentrequest": IdempotentRequest.objects.filter(end_user=end_user),
        "memory_exportjob": ExportJob.objects.filter(end_user=end_user),
        "memory_memoryimport": MemoryImport.objects.filter(end_user=end_user),
        "memory_memoryspace": spaces,
        "memory_legalhold": LegalHold.objects.filter(end_user=end_user),  # released ones: an active one refuses
        "memory_enduser": EndUser.objects.filter(pk=end_user.pk),
    }


def _sessions_of(user_id: int) -> list[str]:
    """Live sessions of a login account (expired ones are unusable and purged by clearsessions)."""
    live = Session.objects.filter(expire_date__gt=timezone.now())
    return [s.session_key for s in live.iterator() if s.get_decoded().get("_auth_user_id") == str(user_id)]


# Rows an erasure keeps, emptied of their content: listed in the counts, never among the rows erased.
KEPT_TOMBSTONES = "memory_auditentry (tombstoned)"


def erased_total(counts: dict) -> int:
    """The rows an erasure deleted (or would delete): every count but the audit entries kept as tombstones."""
    return sum(n for table, n in (counts or {}).items() if table != KEPT_TOMBSTONES and isinstance(n, int))


def erasure_counts(*, end_user: EndUser) -> dict[str, int]:
    """Dry run: how many rows each table holds about the end user (audit entries are tombstoned, not deleted)."""
    counts = {table: qs.count() for table, qs in _querysets(end_user).items()}
    counts[KEPT_TOMBSTONES] = AuditEntry.objects.filter(
        tenant_id=end_user.tenant_id, subject_id=end_user.pk, erased=False
    ).count()
    if end_user.account_id:
        counts["auth_user"] = 1
        counts["django_session"] = len(_sessions_of(end_user.account_id))
    return counts


@dataclass(frozen=True)
class Erasure:
    counts: dict[str, int]
    receipt: ErasureReceipt | None


def _receipt_hash(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def subject_reference(end_user: EndUser) -> str:
    """A stable, unreadable reference to the end user: lets a DPO prove which request a receipt answers."""
    return subject_reference_of(tenant_id=end_user.tenant_id, external_id=end_user.external_id)


def subject_reference_of(*, tenant_id: int, external_id: str) -> str:
    return hashlib.sha256(f"{tenant_id}:{external_id}".encode()).hexdigest()


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
    for queryset in _querysets(end_user).values():
        queryset.delete()
    if account_id:
        Session.objects.filter(session_key__in=_sessions_of(account_id)).delete()
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
