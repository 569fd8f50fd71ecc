"""Retention: a tenant's policy (maximum age per tier, an inactivity rule) and the run that carries out the plan of
what its next run removes, in a bounded batch.

The console's dry run and the run call the same planner (`retention_plan`, memory.selectors.retention), so the
preview is what happens. Items go through the services that forget or erase them by hand
(memory.services.governance, memory.services.gdpr), so what was derived from them and copies of their text are
handled as for a manual forget; inactive users are erased with a receipt, as a manual erasure. Users under legal
hold are left out of the plan, and a hold placed after planning is honoured by those services (the item is counted
as skipped).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import (
    Assistant,
    AuditEntry,
    ChatReply,
    EndUser,
    KnowledgeEntry,
    Page,
    ProfileVersion,
    RetentionPolicy,
    RetentionRun,
    RunStatus,
    Tenant,
)
from memory.models.retention import ASSISTANT_TIERS, RETENTION_TIERS
from memory.selectors.forgetting import ForgetImpact
from memory.selectors.retention import LIMIT_FIELDS, RetentionPlan, retention_plan
from memory.services import governance
from memory.services.audit import Actor, audit_prune, audit_record
from memory.services.gdpr import user_erase
from memory.services.legal_hold import LegalHoldActive, legal_hold_check
from memory.services.turns import EndUserClosed, end_user_write_lock

log = logging.getLogger(__name__)

ACTOR = Actor.system("retention")
TIER_WORDS = {
    "inactive_users": "inactive users erased",
    "pages": "short- and mid-term pages",
    "knowledge": "long-term facts",
    "profile_versions": "profile versions",
    "chat_replies": "chat reply records",
    "audit_entries": "audit entries",
}
# A run still marked running after this long lost its worker; the next run may start.
STALE_RUN = datetime.timedelta(hours=2)


class RetentionPolicyError(ValueError):
    """The policy cannot be saved as asked; the message says why."""


# --- Policies -----------------------------------------------------------------------------------------------------


def _limits_of(policy: RetentionPolicy | None) -> dict[str, int | None]:
    return {tier: getattr(policy, name) if policy else None for tier, name in LIMIT_FIELDS.items()}


@transaction.atomic
def retention_policy_set(
    *, tenant: Tenant, limits: dict[str, int | None], actor: Actor, assistant: Assistant | None = None
) -> RetentionPolicy:
    """Save the tenant's policy, or an assistant's override (pages, facts and chat replies only), audited with the
    limits before and after. `limits` maps a tier (RETENTION_TIERS) to days (months for inactive_users) or None."""
    allowed = ASSISTANT_TIERS if assistant else RETENTION_TIERS
    unknown = {tier for tier, value in limits.items() if value is not None and tier not in allowed}
    if unknown:
        raise RetentionPolicyError(f"an assistant's policy cannot limit {', '.join(sorted(unknown))}")
    if assistant is not None and assistant.tenant_id != tenant.pk:
        raise RetentionPolicyError("the assistant belongs to another tenant")
    if any(value is not None and value < 1 for value in limits.values()):
        raise RetentionPolicyError("a limit must be at least 1")
    policy = RetentionPolicy.objects.select_for_update().filter(tenant=tenant, assistant=assistant).first()
    before = _limits_of(policy)
    policy = policy or RetentionPolicy(tenant=tenant, assistant=assistant)
    for tier, name in LIMIT_FIELDS.items():
        setattr(policy, name, limits.get(tier) if tier in allowed else None)
    policy.updated_by_label = actor.label
    policy.save()
    audit_record(
        tenant=tenant, actor=actor, action="retention.policy", target_type="retention_policy", target_id=policy.pk,
        before=before, after=_limits_of(policy), detail={"assistant": assistant.external_id if assistant else None},
    )  # fmt: skip
    return policy


@transaction.atomic
def retention_policy_delete(*, tenant: Tenant, assistant: Assistant, actor: Actor) -> bool:
    """Remove an assistant's override (the tenant's policy applies to it again). Returns whether one existed."""
    policy = RetentionPolicy.objects.filter(tenant=tenant, assistant=assistant).first()
    if policy is None:
        return False
    before = _limits_of(policy)
    policy.delete()
    audit_record(
        tenant=tenant, actor=actor, action="retention.policy", target_type="retention_policy",
        before=before, after=None, detail={"assistant": assistant.external_id, "removed": True},
    )  # fmt: skip
    return True


# --- Running ------------------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    skipped: dict[str, int] = field(default_factory=dict)
    derived: dict[str, int] = field(default_factory=dict)
    receipts: list[int] = field(default_factory=list)

    def skip(self, tier: str) -> None:
        self.skipped[tier] = self.skipped.get(tier, 0) + 1

    def add(self, impact, *, tier: str, items: int) -> None:
        """Count what a forget removed or re-derived besides the `items` of `tier` it was asked to forget."""
        for name, value in impact.as_detail().items():
            value -= items if name == tier else 0
            if value:
                self.derived[name] = self.derived.get(name, 0) + value


def _reason(plan: RetentionPlan, tier: str, limit: int | None = None) -> str:
    unit = "months without activity" if tier == "inactive_users" else "days"
    if limit is None:
        return f"retention policy: {TIER_WORDS[tier]} past their maximum age"
    return f"retention policy: {TIER_WORDS[tier]} past {limit} {unit}"


def _apply_inactive(plan: RetentionPlan, outcome: _Outcome, months: int | None) -> None:
    for end_user in EndUser.objects.filter(pk__in=plan.inactive_users).select_related("tenant"):
        try:
            erasure = user_erase(
                end_user=end_user, actor=ACTOR, dry_run=False, reason=_reason(plan, "inactive_users", months),
                legal_basis=f"storage limitation: no activity for {months} months (retention policy)",
            )  # fmt: skip
        except (LegalHoldActive, EndUserClosed):
            outcome.skip("inactive_users")
            continue
        assert erasure.receipt is not None  # a real erasure (not a dry run) always writes its receipt
        outcome.receipts.append(erasure.receipt.pk)


def _apply_pages(plan: RetentionPlan, outcome: _Outcome) -> None:
    users = EndUser.objects.in_bulk(list(plan.pages))
    for end_user_id, page_ids in plan.pages.items():
        try:
            impact = governance.pages_forget(
                end_user=users[end_user_id], page_ids=page_ids, actor=ACTOR, action="retention.pages",
                reason=_reason(plan, "pages"),
            )  # fmt: skip
        except (LegalHoldActive, EndUserClosed):
            outcome.skipped["pages"] = outcome.skipped.get("pages", 0) + len(page_ids)
            continue
        outcome.add(impact, tier="pages", items=impact.pages)


def _apply_items(plan: RetentionPlan, outcome: _Outcome, tier: str) -> None:
    """Facts and profile versions, each through its own forget service (one plan each, as by hand)."""
    forgets: dict[str, tuple[type[KnowledgeEntry | ProfileVersion], Callable[..., ForgetImpact], str]] = {
        "knowledge": (KnowledgeEntry, governance.knowledge_forget, "entry"),
        "profile_versions": (ProfileVersion, governance.profile_version_forget, "version"),
    }
    model, forget, param = forgets[tier]
    items = model.objects.filter(pk__in=getattr(plan, tier)).select_related("end_user").order_by("created_at", "id")
    for item in items.without_vectors() if model is KnowledgeEntry else items:
        try:
            outcome.add(forget(**{param: item}, actor=ACTOR, reason=_reason(plan, tier)), tier=tier, items=1)
        except (LegalHoldActive, EndUserClosed):
            outcome.skip(tier)


def _apply_replies(plan: RetentionPlan, outcome: _Outcome) -> None:
    """Reply records (memory used, tokens, a failed reply's message) go; the turn itself is a page, kept by age."""
    users = EndUser.objects.in_bulk(list(plan.chat_replies))
    for end_user_id, reply_ids in plan.chat_replies.items():
        try:
            chat_replies_expire(end_user=users[end_user_id], reply_ids=reply_ids, reason=_reason(plan, "chat_replies"))
        except (LegalHoldActive, EndUserClosed):
            outcome.skipped["chat_replies"] = outcome.skipped.get("chat_replies", 0) + len(reply_ids)


@transaction.atomic
def chat_replies_expire(*, end_user: EndUser, reply_ids: list[int], reason: str) -> int:
    """Delete some of an end user's reply records under their write lock (refused under legal hold), audited."""
    end_user_write_lock(end_user, inactive_ok=True)
    legal_hold_check(end_user=end_user, action="retention")
    deleted, _ = ChatReply.objects.filter(pk__in=reply_ids, space__end_user=end_user).delete()
    if deleted:
        audit_record(
            tenant=end_user.tenant_id, actor=ACTOR, action="retention.chat_replies", end_user=end_user,
            target_type="chat_reply", reason=reason, detail={"deleted": deleted},
        )  # fmt: skip
    return deleted


def _removed(plan: RetentionPlan) -> dict[str, int]:
    """How many planned items are gone now, per tier (one query per tier that planned something)."""
    models: dict[str, type[EndUser | Page | KnowledgeEntry | ProfileVersion | ChatReply]] = {
        "inactive_users": EndUser,
        "pages": Page,
        "knowledge": KnowledgeEntry,
        "profile_versions": ProfileVersion,
        "chat_replies": ChatReply,
    }
    removed = {}
    for tier, ids in plan.ids().items():
        if not ids:
            removed[tier] = 0
        elif tier == "audit_entries":
            left = AuditEntry.objects.filter(tenant=plan.tenant, seq__in=ids).count()
            removed[tier] = len(ids) - left
        else:
            removed[tier] = len(ids) - models[tier].objects.filter(pk__in=ids).count()
    return removed


def retention_apply(*, plan: RetentionPlan) -> tuple[dict[str, int], _Outcome]:
    """Carry out a plan, tier by tier in RETENTION_TIERS order; returns the counts removed and what else happened."""
    outcome = _Outcome()
    policy = RetentionPolicy.objects.filter(tenant=plan.tenant, assistant__isnull=True).first()
    _apply_inactive(plan, outcome, policy.inactive_users_max_months if policy else None)
    _apply_pages(plan, outcome)
    _apply_items(plan, outcome, "knowledge")
    _apply_items(plan, outcome, "profile_versions")
    _apply_replies(plan, outcome)
    if plan.audit_entries:
        days = policy.audit_entries_max_days if policy else None
        # the prune reads the holds itself, under the lock that placing a hold takes (a hold placed since the plan
        # was made still keeps its user's entries)
        audit_prune(
            tenant=plan.tenant, through_seq=plan.audit_through_seq, actor=ACTOR,
            reason=_reason(plan, "audit_entries", days),
        )  # fmt: skip
    return _removed(plan), outcome


def _run_start(tenant: Tenant, trigger: str, now: datetime.datetime, day: datetime.date | None) -> RetentionRun | None:
    """A new run row, or None while another run of the tenant is in progress (one that lost its worker is closed)."""
    RetentionRun.objects.filter(tenant=tenant, status=RunStatus.RUNNING, started_at__lt=now - STALE_RUN).update(
        status=RunStatus.FAILED, finished_at=now, error="the worker running it stopped"
    )
    try:
        with transaction.atomic():
            return RetentionRun.objects.create(tenant=tenant, trigger=trigger, day=day, started_at=now)
    except IntegrityError:
        return None


def retention_run(
    *, tenant: Tenant, trigger: str, now: datetime.datetime | None = None, limit: int | None = None,
    day: datetime.date | None = None,
) -> RetentionRun | None:  # fmt: skip
    """Plan and carry out one bounded batch of the tenant's retention, recorded as a RetentionRun.

    Returns None when another run of the tenant is in progress. Each item is removed in its own transaction, so a
    failure half-way keeps what was done; the run is then marked failed with the error, and the next run goes on.
    Idempotent in effect: items already gone are skipped, and a second run finds nothing more to remove.
    """
    now = now or timezone.now()
    run = _run_start(tenant, trigger, now, day)
    if run is None:
        return None
    plan = retention_plan(tenant=tenant, now=now, limit=limit)
    run.planned, run.more = plan.counts(), plan.more
    try:
        run.removed, outcome = retention_apply(plan=plan)
    except Exception as exc:
        log.exception("retention run %s of %s failed", run.pk, tenant.slug)
        run.status, run.error, run.removed = RunStatus.FAILED, str(exc)[:2000], _removed(plan)
        run.finished_at = timezone.now()
        run.save()
        raise
    run.skipped, run.derived, run.status, run.finished_at = (
        outcome.skipped,
        outcome.derived,
        RunStatus.DONE,
        timezone.now(),
    )
    run.save()
    run.receipts.set(outcome.receipts)
    return run


def retention_run_daily(*, tenant_id: int, day: datetime.date) -> RetentionRun | None:
    """Beat's run of one tenant for `day`: skipped when that day's runs already finished (a redelivered task),
    otherwise the next batch. The task queues another batch while the run says there is more."""
    done = RetentionRun.objects.filter(tenant_id=tenant_id, day=day, status=RunStatus.DONE, more=False).exists()
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if done or tenant is None:
        return None
    return retention_run(tenant=tenant, trigger="beat", day=day)


def retention_run_request(*, tenant: Tenant, actor: Actor, reason: str, request_id: str = "") -> None:
    """Queue one batch of the tenant's retention after the transaction commits (the console's "run now"); who asked
    and why goes into the audit log first (`retention.run_requested`), as a single forget's reason does."""
    from memory.tasks import retention_run_task  # the tasks module imports this one

    audit_record(
        tenant=tenant, actor=actor, action="retention.run_requested", reason=reason, request_id=request_id
    )  # fmt: skip
    transaction.on_commit(lambda: retention_run_task.delay(tenant.pk))
