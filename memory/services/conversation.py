"""The two parties of a conversation that an integration names by external ids: the end user and the assistant, and
what a reply reads with them before it retrieves (their memory space, the tenant's personal data policy)."""

from __future__ import annotations

from dataclasses import dataclass

from memory.models import Assistant, EndUser, MemorySpace, PersonalDataPolicy, Tenant
from memory.selectors.people import assistant_get, conversation_read
from memory.services.gdpr import end_user_for_turn


class AssistantUnnamed(Exception):
    """No assistant was named and the tenant has more than one that could be meant."""


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


@dataclass(frozen=True)
class Conversation:
    """The parties of a conversation and what a reply reads before retrieving: the end user, the assistant, their
    memory space (None before its first turn) and the tenant's personal data policy."""

    end_user: EndUser
    assistant: Assistant
    space: MemorySpace | None
    policy: PersonalDataPolicy


def conversation_for(*, tenant: Tenant, user: str, assistant: str | None) -> Conversation:
    """The assistant `assistant` (its external id; None or blank, as for assistant_for: the tenant's only active one)
    and the end user `user`, created on first use, with their space and the tenant's policy: one statement when the
    end user exists (every turn but a user's first). Refuses what conversation_parties refuses, and AssistantUnnamed
    when none is named and several could be meant."""
    assistant = assistant or None
    read = conversation_read(tenant=tenant, user=user, assistant=assistant)
    if assistant is None:
        named = the_only_active(read.assistants)
    elif read.assistants:
        named = read.assistants[0]
    else:
        raise Assistant.DoesNotExist("No such assistant in this tenant.")
    end_user, found = conversation_parties(tenant=tenant, user=user, assistant=named, end_user=read.end_user)
    return Conversation(end_user, found, read.space, read.policy)


def the_only_active(candidates: list[Assistant]) -> Assistant:
    """The one of a tenant's first two active assistants (by external id) a call that names none means."""
    if len(candidates) > 1:
        raise AssistantUnnamed("This tenant has several assistants: name one.")
    if not candidates:
        raise Assistant.DoesNotExist("This tenant has no active assistant.")
    return candidates[0]
