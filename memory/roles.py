"""Who may do what in a tenant: the one access helper that every view and API calls.

An operator holds one `Role` per tenant (a `Membership`). Each role grants a fixed set of permissions:

    read    every role: browse users, pages, segments, profiles and knowledge
    write   supervisor, admin: edit, pin, lock and forget memories
    govern  dpo, admin: export, erase, audit
    manage  admin: manage the tenant (assistants, operators, settings)

Superusers get no implicit tenant access: Django's admin is for the machine's owner, the console is for operators.
"""

from __future__ import annotations

from enum import StrEnum

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from memory.models import Membership, Role, Tenant


class Permission(StrEnum):
    READ = "read"
    WRITE = "write"
    GOVERN = "govern"
    MANAGE = "manage"


PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.AGENT: frozenset({Permission.READ}),
    Role.SUPERVISOR: frozenset({Permission.READ, Permission.WRITE}),
    Role.DPO: frozenset({Permission.READ, Permission.GOVERN}),
    Role.ADMIN: frozenset(Permission),
}

User = AbstractBaseUser | AnonymousUser


def role_grants(role: Role | str, permission: Permission | str) -> bool:
    """Whether `role` carries `permission` (unknown permissions raise ValueError: a typo must not deny silently)."""
    return Permission(permission) in PERMISSIONS[Role(role)]


def role_for(user: User, tenant: Tenant) -> Role | None:
    """The user's role in `tenant`, or None when they have none (anonymous users and end users have none)."""
    if not user.is_authenticated:
        return None
    role = Membership.objects.filter(user_id=user.pk, tenant=tenant).values_list("role", flat=True).first()
    return Role(role) if role else None


def has_permission(user: User, tenant: Tenant, permission: Permission | str) -> bool:
    """Whether the user's role in `tenant` grants `permission`."""
    role = role_for(user, tenant)
    return role is not None and role_grants(role, permission)


def tenant_for_operator_or_404(user: User, slug: str, permission: Permission | str) -> Tenant:
    """The tenant `slug` if the user may act on it with `permission`.

    Raises Http404 when the tenant does not exist or the user has no role in it (the same answer, so slugs of
    other tenants don't leak), and PermissionDenied when their role lacks the permission.
    """
    membership = None
    if user.is_authenticated:
        # the tenant's personal-data policy comes along: the console masks with it on most screens
        membership = (
            Membership.objects.filter(user_id=user.pk, tenant__slug=slug)
            .select_related("tenant", "tenant__personal_data_policy")
            .first()
        )
    if membership is None:
        raise Http404("No such tenant")
    if not role_grants(membership.role, permission):
        raise PermissionDenied(f"Your role in {membership.tenant} does not allow {Permission(permission)}")
    return membership.tenant


def memberships_for(user: User) -> list[Membership]:
    """The user's memberships with their tenants, by tenant name (empty for anyone who is not an operator)."""
    if not user.is_authenticated:
        return []
    return list(Membership.objects.filter(user_id=user.pk).select_related("tenant").order_by("tenant__name"))
