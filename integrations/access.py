"""Who calls an integration: the same hashed API tokens and scopes as the REST API, without DRF's request.

The MCP server and the memory proxy take a raw `mos_...` token (an environment variable or an `Authorization:
Bearer` header) and get the `Principal` the REST API would: the token's tenant, its scopes, and the token as the
actor every audit entry names.
"""

from __future__ import annotations

from types import SimpleNamespace

from api.access import Principal
from api.throttling import TokenRateThrottle
from memory.models import Assistant, Tenant
from memory.selectors.people import assistant_get, assistant_list
from memory.services.api_tokens import api_token_authenticate
from memory.services.conversation import the_only_active


class NotAuthenticated(Exception):
    """No token, or one that is unknown, expired or revoked."""


class ScopeMissing(Exception):
    """The token is valid but lacks the scope the call needs."""


class RateLimited(Exception):
    """The token has made API_RATE_LIMIT calls this period; `wait` is the seconds until the next is allowed."""

    def __init__(self, wait: float | None) -> None:
        super().__init__("Too many requests for this token; slow down.")
        self.wait = wait


BEARER = "bearer"


def bearer_token(authorization: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header; raises NotAuthenticated for anything else."""
    parts = (authorization or "").split()
    if len(parts) != 2 or parts[0].lower() != BEARER:
        raise NotAuthenticated("Send the API token as 'Authorization: Bearer <token>'.")
    return parts[1]


def principal_for_token(raw: str, *, scope: str) -> Principal:
    """The caller `raw` authenticates, holding `scope`; raises NotAuthenticated, ScopeMissing or RateLimited.

    Authenticates afresh on every call, so a revoked token stops working at once (one indexed query). Each call
    counts against the token's API_RATE_LIMIT, the same count the REST API keeps (in CACHE_URL's cache).
    """
    token = api_token_authenticate(raw=raw or "")
    if token is None:
        raise NotAuthenticated("The token is not valid, has expired or was revoked.")
    principal = Principal.of_token(token)
    if scope not in principal.scopes:
        raise ScopeMissing(f"This needs the '{scope}' scope.")
    throttle = TokenRateThrottle()
    if not throttle.allow_request(SimpleNamespace(auth=token), None):
        raise RateLimited(throttle.wait())
    return principal


def assistant_for(tenant: Tenant, external_id: str | None) -> Assistant:
    """The assistant `external_id` of `tenant`, or when none is named the tenant's only active assistant.

    Raises Assistant.DoesNotExist for an unknown one (or a tenant without an active assistant) and AssistantUnnamed
    when several could be meant. Tokens belong to a tenant, not to an assistant, so a tenant with several
    assistants names one per call.
    """
    if external_id:
        return assistant_get(tenant=tenant, external_id=external_id)
    return the_only_active(list(assistant_list(tenant=tenant, active=True)[:2]))
