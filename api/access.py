"""Who is calling and on which tenant's behalf: one `Principal` per request, from a token or an operator's session.

A token belongs to one tenant and carries scopes. An operator (session authentication, the dashboard's own calls)
acts on the tenant named by the `X-Tenant` header, or on their only tenant, with the permissions of their role.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import exceptions
from rest_framework.request import Request

from memory.models import ApiToken, Membership, Tenant
from memory.not_found import not_found_message
from memory.roles import PERMISSIONS
from memory.services.audit import Actor

TENANT_HEADER = "X-Tenant"


@dataclass(frozen=True)
class Principal:
    tenant: Tenant
    scopes: frozenset[str]
    actor: Actor
    token: ApiToken | None = None

    @classmethod
    def of_token(cls, token: ApiToken) -> Principal:
        """The caller an API token stands for: its tenant, its scopes, and itself as the actor audits name."""
        return cls(token.tenant, frozenset(token.scopes), Actor.api_token(token.pk, token.name), token)


def principal_of(request: Request) -> Principal:
    """The caller of an authenticated request (cached on it). Raises 404 for a tenant the operator has no role in."""
    cached = getattr(request, "_memoryos_principal", None)
    if cached is not None:
        return cached
    is_token = isinstance(request.auth, ApiToken)
    principal = Principal.of_token(request.auth) if is_token else _operator_principal(request)
    request._memoryos_principal = principal
    return principal


def _operator_principal(request: Request) -> Principal:
    memberships = Membership.objects.filter(user=request.user).select_related("tenant")
    slug = request.headers.get(TENANT_HEADER, "").strip()
    if slug:
        memberships = memberships.filter(tenant__slug=slug)
    found = list(memberships[:2])
    if not found:
        raise exceptions.NotFound(not_found_message(Tenant.DoesNotExist))
    if len(found) > 1:
        raise exceptions.ValidationError({TENANT_HEADER: ["You belong to several tenants: name one in this header."]})
    membership = found[0]
    scopes = frozenset(str(permission) for permission in PERMISSIONS[membership.role])
    return Principal(membership.tenant, scopes, Actor.operator(request.user))
