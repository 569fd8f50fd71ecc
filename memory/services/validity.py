"""Marking a fact or a turn outdated by hand (and current again), and escalations: an item flagged for a supervisor.

Outdated is not forgetting: the item stays, readable as history ("used to: coffee, until 27 Nov"), with the replacing
value a person gave, if any; retrieval and prompts read `valid_to` (memory.retrieval) and never offer it as current.
So, like an edit, it is allowed under a legal hold and on a paused space, and on a locked item (locked keeps
*automatic* updating away; people may still change it, as governance's update services allow). Marking an item that
already is in the state asked for changes nothing, is not audited and returns False, as flags do.

Every change is audited on the item's owner: `knowledge.outdated` / `knowledge.current`, `page.outdated` /
`page.current`, `escalation.open`, `escalation.resolve` / `escalation.dismiss`. Who may call what is checked by the
callers (memory.roles): outdated and current need write (or the owner), opening an escalation read, settling it write.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memory.models import ActorKind, Escalation, EscalationState, KnowledgeEntry, Page, Tenant
from memory.services.audit import Actor, audit_record
from memory.services.governance import GovernanceError, _audit, _item_owner_lock, _owner_lock, _reason
from memory.services.personal_data import text_for_storage
from memory.services.webhook_events import fact_item, item_data, webhook_event_emit

MAX_NOTE = 1000  # a replacing value or an escalation's note: a sentence or two, not a document


def _note(text: str, *, tenant_id: int, what: str, required: bool = False) -> str:
    """`text` stripped, checked and redacted under the tenant's do-not-store categories, as other text edits are."""
    text = (text or "").strip()
    if required and not text:
        raise GovernanceError(f"the {what} is empty")
    if len(text) > MAX_NOTE:
        raise GovernanceError(f"the {what} is longer than {MAX_NOTE} characters")
    if "\x00" in text:
        raise GovernanceError(f"the {what} contains a NUL character")
    return text_for_storage(tenant=tenant_id, text=text) if text else ""


# --- Outdated and current -----------------------------------------------------------------------------------------


def _mark_outdated(item, *, actor: Actor, reason: str, replacement: str, now: datetime | None, request_id: str) -> bool:
    reason = _reason(reason)
    replacement = _note(replacement, tenant_id=item.end_user.tenant_id, what="replacing value")
    _item_owner_lock(item)
    now = now or timezone.now()
    changed = (
        type(item).objects.filter(pk=item.pk, valid_to__isnull=True).update(valid_to=now, outdated_note=replacement)
    )
    if not changed:
        return False
    item.valid_to, item.outdated_note = now, replacement
    detail = {"valid_to": now.isoformat()}
    action = f"{item.item_kind}.outdated"
    _audit(
        item, actor=actor, action=action, reason=reason, after=replacement or None, detail=detail, request_id=request_id
    )
    return True


def _mark_current(item, *, actor: Actor, reason: str, request_id: str, **cleared) -> bool:
    reason = _reason(reason)
    _item_owner_lock(item)
    was = {"valid_to": item.valid_to, "outdated_note": item.outdated_note}
    changed = (
        type(item).objects.filter(pk=item.pk, valid_to__isnull=False).update(valid_to=None, outdated_note="", **cleared)
    )
    if not changed:
        return False
    item.valid_to, item.outdated_note = None, ""
    for field, value in cleared.items():
        setattr(item, field, value)
    detail = {"was_outdated_since": was["valid_to"].isoformat() if was["valid_to"] else None}
    action = f"{item.item_kind}.current"
    _audit(item, actor=actor, action=action, reason=reason, before=was["outdated_note"] or None, detail=detail,
           request_id=request_id)  # fmt: skip
    return True


@transaction.atomic
def knowledge_mark_outdated(
    *,
    entry: KnowledgeEntry,
    actor: Actor,
    reason: str,
    replacement: str = "",
    now: datetime | None = None,
    request_id: str = "",
) -> bool:
    """Mark a fact as no longer true from `now` (valid_to), with the replacing value if given; audited.

    The fact stays, as history. Returns False (nothing audited) when it was already outdated. Emits `fact.outdated`.
    """
    if not _mark_outdated(entry, actor=actor, reason=reason, replacement=replacement, now=now, request_id=request_id):
        return False
    owner = entry.end_user
    valid_to = entry.valid_to.isoformat() if entry.valid_to else None
    data = {"user": owner.external_id, "item": fact_item(entry), "valid_to": valid_to}
    data |= {"replacement": entry.outdated_note} if entry.outdated_note else {}
    webhook_event_emit(tenant_id=owner.tenant_id, type="fact.outdated", data=data, subject_id=owner.pk)
    return True


@transaction.atomic
def page_mark_outdated(
    *, page: Page, actor: Actor, reason: str, replacement: str = "", now: datetime | None = None, request_id: str = ""
) -> bool:
    """Mark a turn as no longer true from `now`; it stays in the transcript and is quoted only as earlier. Audited.

    Returns False (nothing audited) when it was already outdated.
    """
    return _mark_outdated(page, actor=actor, reason=reason, replacement=replacement, now=now, request_id=request_id)


@transaction.atomic
def knowledge_mark_current(*, entry: KnowledgeEntry, actor: Actor, reason: str, request_id: str = "") -> bool:
    """Undo outdated: clear the fact's valid_to, replacing value and the fact that superseded it; audited.

    Returns False (nothing audited) when it was current already.
    """
    return _mark_current(entry, actor=actor, reason=reason, request_id=request_id, superseded_by=None)


@transaction.atomic
def page_mark_current(*, page: Page, actor: Actor, reason: str, request_id: str = "") -> bool:
    """Undo outdated on a turn: clear its valid_to and replacing value; audited. False when it was current."""
    return _mark_current(page, actor=actor, reason=reason, request_id=request_id)


# --- Escalations --------------------------------------------------------------------------------------------------


def _operator_id(actor: Actor) -> int | None:
    """The login account behind an operator actor (an escalation names it); None for tokens and the system."""
    return int(actor.id) if actor.kind == ActorKind.OPERATOR else None


def _escalation_audit(
    escalation: Escalation, *, actor: Actor, action: str, reason: str, request_id: str, taken: str = ""
) -> None:
    """Audit on the item's owner, naming the item (so its history shows the flag), the escalation and the action
    taken on the item to settle it, if any."""
    audit_record(
        tenant=escalation.tenant_id,
        actor=actor,
        action=action,
        end_user=escalation.end_user,
        target_type=escalation.target_type,
        target_id=escalation.target_id,
        reason=reason,
        detail={"escalation": escalation.pk} | ({"action": taken} if taken else {}),
        request_id=request_id,
    )


@transaction.atomic
def escalation_open(*, tenant: Tenant, item, actor: Actor, note: str, request_id: str = "") -> Escalation:
    """Flag one memory item of `tenant` for a supervisor, with a note saying what is wrong; audited `escalation.open`.

    Any role that reads the owner's memory may flag (the caller checks). The note is redacted as stored text is.
    """
    owner = item.end_user
    if owner.tenant_id != tenant.pk:
        raise GovernanceError("that item is not in this tenant")
    note = _note(note, tenant_id=tenant.pk, what="note", required=True)
    _item_owner_lock(item)
    escalation = Escalation.objects.create(
        tenant=tenant, end_user=owner, target_type=item.item_kind, target_id=item.pk, note=note,
        flagged_by_id=_operator_id(actor),
    )  # fmt: skip
    _escalation_audit(escalation, actor=actor, action="escalation.open", reason=note, request_id=request_id)
    data = {
        "user": owner.external_id,
        "item": item_data(kind=item.item_kind, id=item.pk),
        "escalation_id": escalation.pk,
    }
    webhook_event_emit(tenant_id=tenant.pk, type="item.flagged", data=data | {"note": note}, subject_id=owner.pk)
    return escalation


@transaction.atomic
def escalation_resolve(
    *,
    escalation: Escalation,
    actor: Actor,
    resolution: str,
    dismiss: bool = False,
    action: str = "",
    request_id: str = "",
) -> Escalation:
    """Settle an open escalation (resolved, or dismissed), with a note; audited. Supervisors and above (the caller
    checks). Settling one already settled is refused (GovernanceError): two supervisors never both settle it.

    `action` names what was done to the item to settle it (edit, outdated, forget...: memory.items), in the same
    transaction as that change; the audit entry's detail carries it beside the escalation's id."""
    resolution = _note(resolution, tenant_id=escalation.tenant_id, what="resolution", required=True)
    _owner_lock(escalation.end_user)
    state = EscalationState.DISMISSED if dismiss else EscalationState.RESOLVED
    now = timezone.now()
    settled = Escalation.objects.filter(pk=escalation.pk, state=EscalationState.OPEN).update(
        state=state, resolution=resolution, resolved_by_id=_operator_id(actor), resolved_at=now
    )
    if not settled:
        raise GovernanceError("this escalation was already settled")
    escalation.refresh_from_db()
    verb = "escalation.dismiss" if dismiss else "escalation.resolve"
    _escalation_audit(escalation, actor=actor, action=verb, reason=resolution, request_id=request_id, taken=action)
    return escalation
