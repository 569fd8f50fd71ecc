"""Data-subject requests as cases: logging one, extending its deadline, and answering it (fulfil, refuse, withdraw).

Every step is audited on the request (`target_type="data_subject_request"`), so the request's timeline is its audit
entries; fulfilling runs the service that does the work (export, erasure, memory pause) and links what it left
(the export job, the erasure receipt, the audit entries of forgets, edits and pauses). Who may call these is
checked by the callers (memory.roles: govern).
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.models import (
    ActorKind,
    AuditEntry,
    DataSubjectRequest,
    EndUser,
    MemorySpace,
    RequestKind,
    RequestStatus,
    Tenant,
)
from memory.selectors.webhooks import webhook_endpoint_tenants
from memory.services.audit import Actor, audit_record
from memory.services.gdpr import user_erase
from memory.services.gdpr_export import export_request
from memory.services.governance import memory_pause_set
from memory.services.legal_hold import LegalHoldActive
from memory.services.webhook_events import Event, webhook_events_emit

TARGET = "data_subject_request"
DUE_MONTHS = 1  # Art. 12(3): one month from receipt
EXTENDED_MONTHS = 3  # ... extendable by two further months where necessary
MAX_NOTE = 2000
ERASURE_BASIS = "GDPR Art. 17 (right to erasure)"
# What answers a rectification or a partial erasure: the edits and forgets made on the user's memory since the request
RECTIFYING = (".edit", ".outdated")
FORGETTING = (".forget",)
PAUSING = ("memory.pause",)
UNANSWERED = (RequestStatus.OPEN, RequestStatus.IN_PROGRESS)


class DataSubjectRequestError(ValueError):
    """The request cannot change as asked; the message says why."""


# --- Deadlines (pure) ---------------------------------------------------------------------------------------------


def months_after(moment: datetime, months: int) -> datetime:
    """`moment` plus whole calendar months; a day the target month lacks becomes its last (31 Jan + 1 = 28/29 Feb)."""
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def request_due(received_at: datetime) -> datetime:
    """The statutory deadline: one calendar month after receipt."""
    return months_after(received_at, DUE_MONTHS)


def request_extended_due(received_at: datetime) -> datetime:
    """The furthest deadline an extension allows: three calendar months after receipt."""
    return months_after(received_at, EXTENDED_MONTHS)


# --- Steps --------------------------------------------------------------------------------------------------------


def _note(text: str, what: str, *, required: bool) -> str:
    text = (text or "").strip()
    if required and not text:
        raise DataSubjectRequestError(f"a {what} is required")
    if len(text) > MAX_NOTE:
        raise DataSubjectRequestError(f"the {what} is longer than {MAX_NOTE} characters")
    return text


def _operator_id(actor: Actor) -> int | None:
    return int(actor.id) if actor.kind == ActorKind.OPERATOR else None


def _audit(request: DataSubjectRequest, *, actor: Actor, action: str, reason: str = "", detail=None, request_id=""):
    """One step of the request, on its subject's trail while the subject exists (an erasure tombstones the entry's
    text there; the request keeps its own fields)."""
    end_user = EndUser.objects.filter(pk=request.end_user_id).first() if request.end_user_id else None
    return audit_record(
        tenant=request.tenant_id, actor=actor, action=action, end_user=end_user, target_type=TARGET,
        target_id=request.pk, reason=reason, detail=detail, request_id=request_id,
    )  # fmt: skip


@transaction.atomic
def data_subject_request_open(
    *,
    tenant: Tenant,
    kind: str,
    external_id: str,
    channel: str,
    requester: str,
    received_at: datetime,
    actor: Actor,
    identity_check: str = "",
    now: datetime | None = None,
    request_id: str = "",
) -> DataSubjectRequest:
    """Log a request as it arrived; due one calendar month after `received_at`; audited `dsr.open`.

    The external id is kept as typed and matched to the tenant's end user when one has it (or at fulfilment).
    Raises DataSubjectRequestError for a receipt time in the future or a missing requester or external id."""
    now = now or timezone.now()
    if received_at > now:
        raise DataSubjectRequestError("the request cannot have been received in the future")
    external_id = _note(external_id, "external id", required=True)[:200]
    request = DataSubjectRequest.objects.create(
        tenant=tenant, end_user=EndUser.objects.filter(tenant=tenant, external_id=external_id).first(),
        external_id=external_id, kind=RequestKind(kind), channel=channel,
        requester=_note(requester, "requester", required=True)[:300],
        identity_check=_note(identity_check, "identity check", required=False),
        received_at=received_at, due_at=request_due(received_at),
        created_by_id=_operator_id(actor), created_by_label=actor.label[:200],
    )  # fmt: skip
    _audit(request, actor=actor, action="dsr.open", detail={"kind": request.kind}, request_id=request_id)
    return request


def _locked(request: DataSubjectRequest) -> DataSubjectRequest:
    """The request's row, locked, refreshed; refused once answered (two officers never both answer it)."""
    fresh = DataSubjectRequest.objects.select_for_update().get(pk=request.pk)
    if fresh.answered:
        raise DataSubjectRequestError(f"this request was already {fresh.get_status_display().lower()}")
    return fresh


@transaction.atomic
def data_subject_request_extend(
    *, request: DataSubjectRequest, actor: Actor, reason: str, request_id: str = ""
) -> DataSubjectRequest:
    """Extend the deadline to three months after receipt (Art. 12(3)), once, with a reason; audited `dsr.extend`."""
    reason = _note(reason, "reason", required=True)
    request = _locked(request)
    if request.extended_due_at is not None:
        raise DataSubjectRequestError("the deadline was already extended")
    request.extended_due_at = request_extended_due(request.received_at)
    request.extension_reason = reason
    request.save(update_fields=["extended_due_at", "extension_reason", "updated_at"])
    detail = {"extended_due_at": request.extended_due_at.isoformat()}
    _audit(request, actor=actor, action="dsr.extend", reason=reason, detail=detail, request_id=request_id)
    return request


@transaction.atomic
def data_subject_request_start(
    *, request: DataSubjectRequest, actor: Actor, request_id: str = ""
) -> DataSubjectRequest:
    """Mark an open request in progress (someone is working on it); audited `dsr.start`. No-op when it already is."""
    request = _locked(request)
    if request.status == RequestStatus.OPEN:
        request.status = RequestStatus.IN_PROGRESS
        request.save(update_fields=["status", "updated_at"])
        _audit(request, actor=actor, action="dsr.start", request_id=request_id)
    return request


def _answer(request, status: str, *, actor: Actor, action: str, outcome: str, request_id: str, links=None):
    """Close the request as `status` with its outcome and what answered it (`links`: fields to set); audited."""
    request = _locked(request)
    links = links or {}
    request.status, request.outcome, request.answered_at = status, outcome, timezone.now()
    for field, value in links.items():
        setattr(request, field, value)
    request.save(update_fields=["status", "outcome", "answered_at", "updated_at", *links])
    detail = {key: getattr(value, "pk", value) for key, value in links.items() if key != "end_user"}
    _audit(request, actor=actor, action=action, reason=outcome, detail=detail, request_id=request_id)
    return request


@transaction.atomic
def data_subject_request_refuse(
    *, request: DataSubjectRequest, actor: Actor, reason: str, request_id: str = ""
) -> DataSubjectRequest:
    """Refuse the request with its reason (Art. 12(4): the subject must be told why); audited `dsr.refuse`."""
    reason = _note(reason, "reason", required=True)
    return _answer(request, RequestStatus.REFUSED, actor=actor, action="dsr.refuse", outcome=reason,
                   request_id=request_id)  # fmt: skip


@transaction.atomic
def data_subject_request_withdraw(
    *, request: DataSubjectRequest, actor: Actor, note: str = "", request_id: str = ""
) -> DataSubjectRequest:
    """Close the request as withdrawn by the subject, with an optional note; audited `dsr.withdraw`."""
    note = _note(note, "note", required=False)
    return _answer(request, RequestStatus.WITHDRAWN, actor=actor, action="dsr.withdraw", outcome=note,
                   request_id=request_id)  # fmt: skip


# --- Fulfilment ---------------------------------------------------------------------------------------------------


def _subject(request: DataSubjectRequest) -> EndUser:
    """The end user the request is about: linked at logging, or matched now by its external id."""
    end_user = EndUser.objects.filter(tenant_id=request.tenant_id, external_id=request.external_id).first()
    if end_user is None:
        raise DataSubjectRequestError(f"no end user has the external id {request.external_id!r}")
    if request.end_user_id != end_user.pk:
        DataSubjectRequest.objects.filter(pk=request.pk).update(end_user=end_user)
        request.end_user = end_user
    return end_user


def _entries_since(request: DataSubjectRequest, end_user: EndUser, suffixes: tuple[str, ...]) -> list[int]:
    """Ids of the audit entries on the user since the request arrived whose action ends with one of `suffixes`."""
    endings = Q()
    for suffix in suffixes:
        endings |= Q(action__endswith=suffix)
    entries = AuditEntry.objects.filter(
        endings, tenant_id=request.tenant_id, subject_id=end_user.pk, created_at__gte=request.received_at
    )
    return list(entries.order_by("seq").values_list("pk", flat=True))


def _pause_all(request: DataSubjectRequest, end_user: EndUser, actor: Actor, reason: str, request_id: str):
    """Restriction: pause memory for every assistant of the user; the pause entries since the request arrived."""
    for space in MemorySpace.objects.filter(end_user=end_user).select_related("end_user").order_by("id"):
        memory_pause_set(space=space, paused=True, actor=actor, reason=reason, request_id=request_id)
    return _entries_since(request, end_user, PAUSING)


def _held(request: DataSubjectRequest, exc: LegalHoldActive, actor: Actor, request_id: str) -> None:
    """Note on the request that a legal hold refused its erasure; it stays open (its own transaction: it must stay)."""
    with transaction.atomic():
        _audit(request, actor=actor, action="dsr.held", reason=str(exc), request_id=request_id)


def _carry_out(request: DataSubjectRequest, end_user: EndUser, *, actor: Actor, note: str, legal_basis: str,
               request_id: str) -> dict:  # fmt: skip
    """Run the service that answers the request's kind; the links to record on it."""
    reason = note or f"{request.get_kind_display()} request #{request.pk}"
    if request.kind == RequestKind.ACCESS:
        return {"export_job_id": export_request(end_user=end_user, actor=actor, request_id=request_id).pk}
    if request.kind == RequestKind.RESTRICTION:
        return {"fulfilled_by_entries": _pause_all(request, end_user, actor, reason, request_id)}
    if request.kind == RequestKind.RECTIFICATION:
        return {"fulfilled_by_entries": _entries_since(request, end_user, RECTIFYING)}
    if legal_basis == "forgotten":  # a partial erasure: the items forgotten since the request arrived
        forgotten = _entries_since(request, end_user, FORGETTING)
        if not forgotten:
            raise DataSubjectRequestError("nothing of this user was forgotten since the request arrived")
        return {"fulfilled_by_entries": forgotten}
    try:
        erasure = user_erase(end_user=end_user, actor=actor, legal_basis=legal_basis or ERASURE_BASIS, reason=reason,
                             dry_run=False)  # fmt: skip
    except LegalHoldActive as exc:
        _held(request, exc, actor, request_id)
        raise
    return {"erasure_receipt": erasure.receipt, "end_user": None}


def data_subject_request_fulfil(
    *, request: DataSubjectRequest, actor: Actor, note: str = "", legal_basis: str = "", request_id: str = ""
) -> DataSubjectRequest:
    """Answer the request by doing what it asks, then record what did it; audited `dsr.fulfil`.

    access: queues an export (its job is linked); erasure: erases the user (the receipt is linked; the request
    stays), or with `legal_basis="forgotten"` links the forgets made since it arrived; restriction: pauses memory
    for every assistant (the pause entries are linked); rectification: links the edits made since it arrived, or
    needs a note saying what was corrected. Raises DataSubjectRequestError when it cannot be answered so, and
    LegalHoldActive for an erasure under hold: the request stays open with the refusal noted (`dsr.held`).
    The erasure commits on its own (memory.services.gdpr), so it is not undone if recording the answer fails.
    """
    note = _note(note, "note", required=False)
    with transaction.atomic():
        _locked(request)  # refuse early: answered already
    end_user = _subject(request)
    links = _carry_out(request, end_user, actor=actor, note=note, legal_basis=legal_basis, request_id=request_id)
    if request.kind == RequestKind.RECTIFICATION and not (links["fulfilled_by_entries"] or note):
        raise DataSubjectRequestError("no correction was made since the request arrived: say what was corrected")
    with transaction.atomic():
        return _answer(request, RequestStatus.FULFILLED, actor=actor, action="dsr.fulfil", outcome=note,
                       request_id=request_id, links=links)  # fmt: skip


# --- Deadlines near: dsr.due_soon ---------------------------------------------------------------------------------


def data_subject_requests_due_soon_emit(*, now: datetime | None = None) -> int:
    """Emit `dsr.due_soon` for each unanswered request whose deadline is within WEBHOOK_DSR_DUE_SOON_DAYS, in the
    tenants whose endpoints want it (beat, hourly). Once per request and deadline: an extended deadline is announced
    again. Returns how many requests were near their deadline."""
    now = now or timezone.now()
    horizon = now + timedelta(days=settings.WEBHOOK_DSR_DUE_SOON_DAYS)
    wanting = webhook_endpoint_tenants(event_type="dsr.due_soon")
    near = (
        DataSubjectRequest.objects.filter(tenant_id__in=wanting, status__in=UNANSWERED)
        .annotate(deadline_at=Coalesce("extended_due_at", "due_at"))
        .filter(deadline_at__gt=now, deadline_at__lte=horizon)
        .order_by("tenant_id", "deadline_at")
    )
    by_tenant: dict[int, list[Event]] = {}
    for request in near:
        by_tenant.setdefault(request.tenant_id, []).append(_due_soon_event(request))
    for tenant_id, events in by_tenant.items():
        webhook_events_emit(tenant_id=tenant_id, events=events)
    return sum(len(events) for events in by_tenant.values())


def _due_soon_event(request: DataSubjectRequest) -> Event:
    """Ids, kind, status and deadline; the subject's external id only while they are not erased."""
    deadline = request.deadline.isoformat()  # the annotated deadline_at, as the model computes it
    data = {"request_id": request.pk, "kind": request.kind, "status": request.status, "due_at": deadline}
    data |= {"user": request.external_id} if request.end_user_id else {}
    return Event("dsr.due_soon", data, subject_id=request.end_user_id, key=f"dsr.due_soon:{request.pk}:{deadline}")
