"""Reads of a tenant's retention: its policies, its runs (newest first), its legal holds, and the plan of what its
next run removes (the console's dry run; memory.services.retention carries the same plan out).

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist; `<entity>_list` returns a queryset.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory.models import (
    Assistant,
    AuditEntry,
    ChatReply,
    EndUser,
    KnowledgeEntry,
    LegalHold,
    Page,
    ProfileVersion,
    RetentionPolicy,
    RetentionRun,
    Tenant,
)

# The policy's field that limits each tier: days, months for inactive users (None: the tier is kept).
LIMIT_FIELDS = {
    "pages": "pages_max_days",
    "knowledge": "knowledge_max_days",
    "profile_versions": "profile_versions_max_days",
    "chat_replies": "chat_replies_max_days",
    "audit_entries": "audit_entries_max_days",
    "inactive_users": "inactive_users_max_months",
}


def retention_policy_list(*, tenant: Tenant) -> QuerySet[RetentionPolicy]:
    """The tenant's policy first, then its assistants' overrides by assistant name."""
    policies = RetentionPolicy.objects.filter(tenant=tenant).select_related("assistant")
    return policies.order_by(F("assistant__name").asc(nulls_first=True))


def retention_policy_get(*, tenant: Tenant, assistant: Assistant | None = None) -> RetentionPolicy:
    return RetentionPolicy.objects.get(tenant=tenant, assistant=assistant)


def retention_run_list(*, tenant: Tenant) -> QuerySet[RetentionRun]:
    return RetentionRun.objects.filter(tenant=tenant).order_by("-started_at", "-id")


def retention_run_get(*, tenant: Tenant, id: int) -> RetentionRun:
    return RetentionRun.objects.get(tenant=tenant, pk=id)


def legal_hold_list(*, tenant: Tenant, end_user: EndUser | None = None, active: bool | None = None):
    """The tenant's holds (or one user's), newest first; `active` narrows to those not (or only those) released."""
    holds = LegalHold.objects.filter(tenant=tenant).select_related("end_user").order_by("-placed_at", "-id")
    if end_user is not None:
        holds = holds.filter(end_user=end_user)
    if active is not None:
        holds = holds.filter(released_at__isnull=active)
    return holds


def legal_hold_active(*, end_user: EndUser) -> LegalHold | None:
    """The end user's active hold, or None."""
    return LegalHold.objects.filter(end_user_id=end_user.pk, released_at__isnull=True).first()


def retention_tenants() -> list[int]:
    """The tenants with a retention policy (beat queues a run for each)."""
    return list(RetentionPolicy.objects.values_list("tenant_id", flat=True).distinct().order_by("tenant_id"))


# --- Time maths (pure) ------------------------------------------------------------------------------------------


def months_before(now: datetime.datetime, months: int) -> datetime.datetime:
    """The same day and time `months` calendar months earlier (the month's last day when that day is missing)."""
    month_index = now.year * 12 + now.month - 1 - months
    year, month = divmod(month_index, 12)
    month += 1
    next_month = datetime.date(year + (month == 12), month % 12 + 1, 1)
    last_day = (next_month - datetime.timedelta(days=1)).day
    return now.replace(year=year, month=month, day=min(now.day, last_day))


def days_before(now: datetime.datetime, days: int) -> datetime.datetime:
    return now - datetime.timedelta(days=days)


# --- Planning -----------------------------------------------------------------------------------------------------


@dataclass
class RetentionPlan:
    """What one run removes, by tier: ids, oldest first, at most `limit` per tier. `more`: some tier had more."""

    tenant: Tenant
    now: datetime.datetime
    limit: int
    inactive_users: list[int] = field(default_factory=list)
    pages: dict[int, list[int]] = field(default_factory=dict)  # end user id -> their page ids
    knowledge: list[int] = field(default_factory=list)
    profile_versions: list[int] = field(default_factory=list)
    chat_replies: dict[int, list[int]] = field(default_factory=dict)  # end user id -> their reply ids
    audit_through_seq: int = 0
    audit_entries: int = 0
    held_users: int = 0
    more: bool = False
    has_policy: bool = False

    def ids(self) -> dict[str, list[int]]:
        """The planned ids per tier (the audit as entry numbers), for comparing with what a run removed."""
        return {
            "inactive_users": list(self.inactive_users),
            "pages": sorted(i for ids in self.pages.values() for i in ids),
            "knowledge": list(self.knowledge),
            "profile_versions": list(self.profile_versions),
            "chat_replies": sorted(i for ids in self.chat_replies.values() for i in ids),
            "audit_entries": list(range(self.audit_through_seq - self.audit_entries + 1, self.audit_through_seq + 1)),
        }

    def counts(self) -> dict[str, int]:
        return {tier: len(ids) for tier, ids in self.ids().items()}

    @property
    def total(self) -> int:
        return sum(self.counts().values())


def _age_filter(field_name: str, tier: str, assistant_path: str | None, policies, now) -> Q | None:
    """Rows older than their limit: an assistant's own limit where it sets one, the tenant's elsewhere."""
    tenant_policy = next((p for p in policies if p.assistant_id is None), None)
    overrides = [p for p in policies if p.assistant_id is not None and getattr(p, LIMIT_FIELDS[tier]) is not None]
    match, overridden = None, []
    if assistant_path:
        for policy in overrides:
            cutoff = days_before(now, getattr(policy, LIMIT_FIELDS[tier]))
            overridden.append(policy.assistant_id)
            match = (match or Q()) | Q(**{assistant_path: policy.assistant_id, f"{field_name}__lt": cutoff})
    days = getattr(tenant_policy, LIMIT_FIELDS[tier]) if tenant_policy else None
    if days is not None:
        default = Q(**{f"{field_name}__lt": days_before(now, days)})
        if overridden:
            default &= ~Q(**{f"{assistant_path}__in": overridden})
        match = default if match is None else match | default
    return match


def _oldest(queryset, match: Q | None, order: tuple[str, ...], limit: int, plan: RetentionPlan, *values: str):
    """Up to `limit` rows matching, oldest first, as value tuples; sets `plan.more` when there were more."""
    if match is None:
        return []
    rows = list(queryset.filter(match).order_by(*order).values_list(*values)[: limit + 1])
    plan.more |= len(rows) > limit
    return rows[:limit]


def _by_user(rows) -> dict[int, list[int]]:
    grouped: dict[int, list[int]] = {}
    for pk, end_user_id in rows:
        grouped.setdefault(end_user_id, []).append(pk)
    return grouped


def retention_plan(*, tenant: Tenant, now: datetime.datetime | None = None, limit: int | None = None) -> RetentionPlan:
    """What the next run removes now: per tier, the oldest items past their limit, at most `limit` each.

    Read-only. Users under legal hold are left out (and counted); users erased for inactivity are left out of the
    other tiers (their erasure removes everything). The audit log is removed from its oldest entry on, up to the
    first entry that is young enough or about a user under hold, so what remains is one unbroken chain.
    """
    now = now or timezone.now()
    limit = limit or settings.RETENTION_BATCH_SIZE
    policies = list(RetentionPolicy.objects.filter(tenant=tenant))
    plan = RetentionPlan(tenant=tenant, now=now, limit=limit, has_policy=bool(policies))
    held = set(LegalHold.objects.filter(tenant=tenant, released_at__isnull=True).values_list("end_user_id", flat=True))
    plan.held_users = len(held)
    tenant_policy = next((p for p in policies if p.assistant_id is None), None)
    _plan_inactive(plan, tenant_policy, held)
    excluded = held | set(plan.inactive_users)
    pages = Page.objects.filter(space__tenant=tenant).exclude(space__end_user_id__in=excluded)
    match = _age_filter("at", "pages", "space__assistant_id", policies, now)
    plan.pages = _by_user(_oldest(pages, match, ("at", "id"), limit, plan, "pk", "space__end_user_id"))
    facts = KnowledgeEntry.objects.filter(end_user__tenant=tenant).exclude(end_user_id__in=excluded)
    match = _age_filter("created_at", "knowledge", "assistant_id", policies, now)
    plan.knowledge = [pk for (pk,) in _oldest(facts, match, ("created_at", "id"), limit, plan, "pk")]
    versions = ProfileVersion.objects.filter(end_user__tenant=tenant).exclude(end_user_id__in=excluded)
    match = _age_filter("created_at", "profile_versions", None, policies, now)
    plan.profile_versions = [pk for (pk,) in _oldest(versions, match, ("created_at", "id"), limit, plan, "pk")]
    replies = ChatReply.objects.filter(space__tenant=tenant).exclude(space__end_user_id__in=excluded)
    match = _age_filter("created_at", "chat_replies", "space__assistant_id", policies, now)
    rows = _oldest(replies, match, ("created_at", "id"), limit, plan, "pk", "space__end_user_id")
    plan.chat_replies = _by_user(rows)
    _plan_audit(plan, tenant_policy, held)
    return plan


def _plan_inactive(plan: RetentionPlan, policy: RetentionPolicy | None, held: set[int]) -> None:
    months = policy.inactive_users_max_months if policy else None
    if months is None:
        return
    cutoff = months_before(plan.now, months)
    users = EndUser.objects.filter(tenant=plan.tenant).exclude(pk__in=held)
    users = users.annotate(active_at=Coalesce(F("last_active_at"), F("created_at")))
    rows = _oldest(users, Q(active_at__lt=cutoff), ("active_at", "id"), plan.limit, plan, "pk")
    plan.inactive_users = [pk for (pk,) in rows]


def _plan_audit(plan: RetentionPlan, policy: RetentionPolicy | None, held: set[int]) -> None:
    """The oldest entries up to the first one that must stay (young, about a held user, or the newest)."""
    days = policy.audit_entries_max_days if policy else None
    if days is None:
        return
    entries = AuditEntry.objects.filter(tenant=plan.tenant)
    first = entries.order_by("seq").values_list("seq", flat=True).first()
    if first is None:
        return
    newest = entries.order_by("-seq").values_list("seq", flat=True).first()
    keep = Q(created_at__gte=days_before(plan.now, days)) | Q(subject_id__in=held) | Q(seq=newest)
    first_kept = entries.filter(keep).order_by("seq").values_list("seq", flat=True).first()
    assert first_kept is not None  # the newest entry always stays
    through = min(first_kept - 1, first + plan.limit - 1)
    plan.more |= through < first_kept - 1
    if through >= first:
        plan.audit_through_seq, plan.audit_entries = through, through - first + 1
