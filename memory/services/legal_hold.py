"""Legal holds: placing and releasing them (dpo and admin, with a reason, audited), and the one check every path
that deletes memory goes through: forgetting, erasure and retention refuse while a hold is active, and automatic
deletions (STM overflow while paused, mid-term and knowledge capacity) keep the data instead."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import EndUser, LegalHold
from memory.selectors.retention import legal_hold_active
from memory.services.audit import Actor, audit_lock, audit_record
from memory.services.end_user_lock import EndUserClosed, end_user_write_lock
from memory.services.webhook_events import webhook_event_emit

MAX_REASON = 500


class LegalHoldError(ValueError):
    """The hold cannot be placed or released as asked; the message says why."""


class LegalHoldActive(Exception):
    """The end user is under a legal hold: nothing about them may be forgotten or erased until it is released."""

    def __init__(self, hold: LegalHold, action: str) -> None:
        since = hold.placed_at.strftime("%d %b %Y")
        super().__init__(
            f"{action.capitalize()} is suspended: this user is under a legal hold since {since} "
            f"(placed by {hold.placed_by_label}). A dpo or admin must release the hold first."
        )
        self.hold = hold
        self.action = action


def legal_hold_for_deletion(*, end_user_id: int) -> LegalHold | None:
    """The active hold that keeps the end user's memory from being deleted, or None: the one check every deleting
    path goes through, by hand (forget, erasure, retention: `legal_hold_check`) or automatic (capacity, overflow).

    Takes the user's write lock first (a no-op when the caller holds it), the lock placing a hold takes: a hold
    placed before is seen, one placed meanwhile waits until this transaction ends. An erased user has no hold.
    """
    try:
        end_user_write_lock(EndUser(pk=end_user_id), inactive_ok=True)
    except EndUserClosed:
        return None
    return LegalHold.objects.filter(end_user_id=end_user_id, released_at__isnull=True).first()


def legal_hold_check(*, end_user: EndUser, action: str) -> None:
    """Raise LegalHoldActive when the end user is under hold (read as `legal_hold_for_deletion` reads it)."""
    hold = legal_hold_for_deletion(end_user_id=end_user.pk)
    if hold is not None:
        raise LegalHoldActive(hold, action)


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise LegalHoldError("a reason is required")
    if len(reason) > MAX_REASON:
        raise LegalHoldError(f"the reason is longer than {MAX_REASON} characters")
    return reason


@transaction.atomic
def legal_hold_place(
    *, end_user: EndUser, actor: Actor, reason: str, placed_by=None, request_id: str = ""
) -> LegalHold:
    """Put the end user under legal hold. Takes the user's write lock, so a forget or erasure under way finishes
    first and any later one is refused, then the tenant's audit lock, so an audit prune under way (retention)
    finishes first and any later one reads this hold and keeps the user's entries. Raises LegalHoldError when a
    reason is missing or a hold is already active, EndUserClosed when the user has been erased."""
    reason = _reason(reason)
    end_user_write_lock(end_user, inactive_ok=True)
    audit_lock(end_user.tenant_id)  # the order every writer takes them in: the user's row, then the audit chain
    if legal_hold_active(end_user=end_user) is not None:
        raise LegalHoldError("this user is already under a legal hold")
    try:
        with transaction.atomic():
            hold = LegalHold.objects.create(
                tenant_id=end_user.tenant_id,
                end_user=end_user,
                reason=reason,
                placed_by=placed_by,
                placed_by_label=actor.label,
                placed_at=timezone.now(),
            )
    except IntegrityError:  # placed by someone else a moment ago
        raise LegalHoldError("this user is already under a legal hold") from None
    audit_record(
        tenant=end_user.tenant_id, actor=actor, action="legal_hold.place", end_user=end_user,
        target_type="legal_hold", target_id=hold.pk, reason=reason, request_id=request_id,
    )  # fmt: skip
    _hold_emit(hold, end_user, "legal_hold.placed")
    return hold


def _hold_emit(hold: LegalHold, end_user: EndUser, kind: str) -> None:
    """The hold's event after commit: ids only (a hold's reason may name a legal matter)."""
    data = {"user": end_user.external_id, "legal_hold_id": hold.pk}
    webhook_event_emit(tenant_id=end_user.tenant_id, type=kind, data=data, subject_id=end_user.pk)


@transaction.atomic
def legal_hold_release(
    *, end_user: EndUser, actor: Actor, reason: str, released_by=None, request_id: str = ""
) -> LegalHold:
    """Release the end user's active hold (audited with its reason); forgetting, erasure and retention apply again.
    Raises LegalHoldError when there is no active hold."""
    reason = _reason(reason)
    end_user_write_lock(end_user, inactive_ok=True)
    hold = LegalHold.objects.select_for_update().filter(end_user=end_user, released_at__isnull=True).first()
    if hold is None:
        raise LegalHoldError("this user is not under a legal hold")
    hold.released_at = timezone.now()
    hold.released_by = released_by
    hold.released_by_label = actor.label
    hold.release_reason = reason
    hold.save(update_fields=["released_at", "released_by", "released_by_label", "release_reason"])
    audit_record(
        tenant=end_user.tenant_id, actor=actor, action="legal_hold.release", end_user=end_user,
        target_type="legal_hold", target_id=hold.pk, reason=reason, request_id=request_id,
    )  # fmt: skip
    _hold_emit(hold, end_user, "legal_hold.released")
    return hold
