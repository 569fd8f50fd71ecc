"""What an agent may do with memory through an integration, as plain functions of the caller and the arguments.

The MCP server exposes each as a tool or a resource; they call the same services and selectors as the REST API's
views and answer the same shapes (api.serializers), with the calling token as the actor of every audit entry.
Each takes the caller's `Principal`, looks everything up within its tenant (another tenant's ids are simply not
found) and raises the services' own exceptions; `integrations.errors` turns them into messages.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from api import serializers
from api.access import Principal
from api.idempotency import KEY, Outcome, idempotent
from chat.services import reply_generate
from integrations.access import assistant_for
from memory.items import ITEM_KINDS
from memory.models import EndUser
from memory.models.tiers import PageSource
from memory.selectors.items import knowledge_list, knowledge_search, page_search, profile_version_list
from memory.selectors.people import end_user_get
from memory.services.conversation import conversation_for
from memory.services.governance import memory_read_record
from memory.services.recall import memory_retrieve
from memory.services.turns import turn_record, turn_texts_check
from memory.text import text_refusal

SEARCH_LIMIT_MAX = 50
MAX_ID = 2**63 - 1
KNOWLEDGE_RESOURCE_LIMIT = 200  # a store keeps at most MEMORY_KNOWLEDGE_CAPACITY (100) entries per kind

T = TypeVar("T")


class ToolFailure(Exception):
    """The call was understood but could not be done; the message says why, for the agent to read."""


def texts_checked(tool: Callable[..., T]) -> Callable[..., T]:
    """The tool, refusing (ToolFailure, naming the argument) a text argument that can be neither stored nor looked
    up: a NUL or a lone surrogate, which the REST API's fields refuse too."""

    @functools.wraps(tool)
    def checked(principal: Principal, **arguments) -> T:
        for name, value in arguments.items():
            if isinstance(value, str) and (why := text_refusal(value)):
                raise ToolFailure(f"{name} {why}")
        return tool(principal, **arguments)

    return checked


def _source_ref(principal: Principal) -> str:
    return f"{principal.actor.kind}:{principal.actor.id}"


def _end_user(principal: Principal, user: str) -> EndUser:
    return end_user_get(tenant=principal.tenant, external_id=user)


def _read(principal: Principal, end_user: EndUser, what: str, request_id: str) -> None:
    memory_read_record(actor=principal.actor, end_user=end_user, what=what, request_id=request_id)


@texts_checked
def memory_retrieve_tool(
    principal: Principal,
    *,
    user: str,
    query: str,
    assistant: str | None = None,
    record_visits: bool = True,
    request_id: str = "",
) -> dict:
    """What memory holds for `query`: exactly the body of POST /api/v1/retrieve/ (page ids, dates, scores)."""
    if not query.strip():
        raise ToolFailure("query is empty")
    end_user = _end_user(principal, user)
    found = assistant_for(principal.tenant, assistant)
    _, result = memory_retrieve(
        end_user=end_user,
        assistant=found,
        query=query,
        record_visits=record_visits,
        actor=principal.actor,
        what="mcp memory_retrieve",
        request_id=request_id,
    )
    return serializers.retrieval_out(result)


@texts_checked
def memory_record_turn_tool(
    principal: Principal,
    *,
    user: str,
    user_message: str,
    assistant_reply: str,
    assistant: str | None = None,
    at: datetime | None = None,
    idempotency_key: str | None = None,
) -> dict:
    """Store a turn the agent generated itself (as POST /api/v1/turns/): the user is created on first use.

    With `idempotency_key`, a retry with the same arguments answers the first answer and stores nothing twice; the
    same key with other arguments is refused (the REST API's Idempotency-Key, with keys of their own).
    """
    if idempotency_key is not None and not KEY.match(idempotency_key):
        raise ToolFailure("idempotency_key: use 1 to 100 printable ASCII characters without spaces.")
    turn_texts_check(user_message=user_message, assistant_reply=assistant_reply)  # before the user is created
    named = assistant_for(principal.tenant, assistant).external_id
    data = {"user": user, "assistant": named, "user_message": user_message, "assistant_reply": assistant_reply}
    data["at"] = at.isoformat() if at else None

    def record() -> Outcome:
        parties = conversation_for(tenant=principal.tenant, user=user, assistant=named)
        end_user = parties.end_user
        recorded = turn_record(
            end_user=end_user,
            assistant=parties.assistant,
            space=parties.space,
            policy=parties.policy,
            user_message=user_message,
            assistant_reply=assistant_reply,
            at=at,
            source=PageSource.API,
            source_ref=_source_ref(principal),
        )
        return 201, {"page_id": recorded.page.pk, "queued_updating": recorded.queued_updating}, end_user

    answer = idempotent(
        tenant=principal.tenant, endpoint="mcp-turns", key=idempotency_key, data=data, run=record, atomic=True
    )
    return dict(answer.data)


@texts_checked
def memory_chat_tool(principal: Principal, *, user: str, message: str, assistant: str | None = None) -> dict:
    """Send `message` as the end user and get the assistant's reply from memory (as POST /api/v1/chat/)."""
    conversation = conversation_for(tenant=principal.tenant, user=user, assistant=assistant)
    result = reply_generate(
        end_user=conversation.end_user,
        assistant=conversation.assistant,
        space=conversation.space,
        policy=conversation.policy,
        message=message,
        idempotency_key=f"mcp-{uuid.uuid4()}",
        actor=principal.actor,
    )
    if result.failed:
        raise ToolFailure(f"The reply could not be generated: {result.reply.error}")
    reply = result.reply
    return {"reply": result.text, "memory_used": reply.memory_used, "page_id": reply.page_id, "mode": reply.mode}


@texts_checked
def profile_get_tool(principal: Principal, *, user: str, request_id: str = "") -> dict:
    """The user's current profile (as GET /api/v1/users/{user}/profile/); the read is audited."""
    end_user = _end_user(principal, user)
    current = profile_version_list(tenant=principal.tenant, end_user=end_user).first()
    _read(principal, end_user, "mcp profile_get", request_id)
    if current is None:
        raise ToolFailure("This user has no profile yet.")
    return serializers.ProfileVersionOut(current).data


@texts_checked
def memory_search_tool(
    principal: Principal,
    *,
    user: str,
    query: str,
    assistant: str | None = None,
    limit: int = 10,
    request_id: str = "",
) -> dict:
    """One user's pages and facts holding the words of `query`, best match first; the read is audited."""
    if not query.strip():
        raise ToolFailure("query is empty")
    if not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise ToolFailure(f"limit must be between 1 and {SEARCH_LIMIT_MAX}")
    end_user = _end_user(principal, user)
    found = assistant_for(principal.tenant, assistant) if assistant else None
    pages = page_search(tenant=principal.tenant, end_user=end_user, assistant=found, text=query)[:limit]
    facts = knowledge_search(tenant=principal.tenant, end_user=end_user, assistant=found, text=query)[:limit]
    _read(principal, end_user, "mcp memory_search", request_id)
    return {
        "query": query,
        "pages": serializers.PageOut(pages, many=True).data,
        "knowledge": serializers.KnowledgeOut(facts, many=True).data,
    }


@texts_checked
def memory_forget_tool(
    principal: Principal, *, kind: str, id: int, reason: str, dry_run: bool = False, request_id: str = ""
) -> dict:
    """Forget one item through its kind's forget service (as POST /api/v1/{kind}/{id}/forget/); reason required."""
    item_kind = ITEM_KINDS.get(kind)
    if item_kind is None:
        raise ToolFailure(f"kind must be one of {', '.join(ITEM_KINDS)}")
    if not 1 <= id <= MAX_ID:
        raise item_kind.model.DoesNotExist
    item = item_kind.get(tenant=principal.tenant, id=id)
    if dry_run:
        impact = item_kind.item_impact(item)
        return {"dry_run": True, "impact": impact.as_detail(), "summary": impact.describe(item_kind.name)}
    if not reason.strip():
        raise ToolFailure("A reason is required to forget.")
    report = item_kind.item_forget(item, actor=principal.actor, reason=reason, request_id=request_id)
    return {"forgotten": report.as_detail()}


@texts_checked
def knowledge_read(principal: Principal, *, user: str, request_id: str = "") -> dict:
    """Every fact remembered about the user (the knowledge resource), newest first; the read is audited."""
    end_user = _end_user(principal, user)
    entries = knowledge_list(tenant=principal.tenant, end_user=end_user)[:KNOWLEDGE_RESOURCE_LIMIT]
    _read(principal, end_user, "mcp knowledge", request_id)
    return {"user": user, "knowledge": serializers.KnowledgeOut(entries, many=True).data}
