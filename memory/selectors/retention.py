"""Reads of a tenant's retention: its policies, its runs (newest first) and its legal holds.

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist; `<entity>_list` returns a queryset.
"""

from __future__ import annotations

from django.db.models import F, QuerySet

from memory.models import Assistant, EndUser, LegalHold, RetentionPolicy, RetentionRun, Tenant


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
