"""The two parties of a conversation that an integration names by external ids: the end user and the assistant."""

from __future__ import annotations

from memory.models import Assistant, EndUser, Tenant
from memory.selectors.people import assistant_get
from memory.services.gdpr import end_user_for_turn


class PartyInactive(Exception):
    """The end user or the assistant is deactivated: nothing more is said or stored in their name."""

    def __init__(self, thing: EndUser | Assistant, what: str) -> None:
        super().__init__(f"The {what} {thing.external_id!r} is deactivated.")


def conversation_parties(
    *, tenant: Tenant, user: str, assistant: str | Assistant, end_user: EndUser | None = None
) -> tuple[EndUser, Assistant]:
    """The active assistant `assistant` of `tenant` (its external id, or the assistant a caller has already looked
    up) and the active end user `user`, created on first use (`end_user`: the user, when the caller has read them).

    Raises Assistant.DoesNotExist for an unknown assistant, PartyInactive for a deactivated one of either, and
    EndUserClosed(erased=True) for an erased user (never brought back: see end_user_for_turn).
    """
    found = assistant if isinstance(assistant, Assistant) else assistant_get(tenant=tenant, external_id=assistant)
    if found.tenant_id != tenant.pk:
        raise Assistant.DoesNotExist("No such assistant in this tenant.")
    if not found.is_active:
        raise PartyInactive(found, "assistant")
    end_user = end_user or end_user_for_turn(tenant=tenant, external_id=user)
    if not end_user.is_active:
        raise PartyInactive(end_user, "user")
    return end_user, found
