"""Reads of a tenant's operators: the team list, and who the admins are (whom to ask for another role)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Case, IntegerField, QuerySet, Value, When

from memory.models import Membership, Role, Tenant

RANKS = (Role.ADMIN, Role.DPO, Role.SUPERVISOR, Role.AGENT)  # the team list's order


def membership_list(*, tenant: Tenant) -> QuerySet[Membership]:
    """The tenant's operators with their accounts, admins first, then by name."""
    rank = Case(*(When(role=role, then=Value(n)) for n, role in enumerate(RANKS)), output_field=IntegerField())
    memberships = Membership.objects.filter(tenant=tenant).select_related("user")
    return memberships.alias(rank=rank).order_by("rank", "user__username")


def tenant_admins(tenant_ids: Iterable[int]) -> dict[int, list[str]]:
    """The usernames of each tenant's admins, by tenant id, in one query."""
    admins: dict[int, list[str]] = defaultdict(list)
    rows = Membership.objects.filter(tenant_id__in=list(tenant_ids), role=Role.ADMIN).order_by("user__username")
    for tenant_id, username in rows.values_list("tenant_id", "user__username"):
        admins[tenant_id].append(username)
    return admins
