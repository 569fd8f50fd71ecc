"""Turns, retrieval and chat: what an agent calls on every message."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api import serializers
from api.exceptions import Conflict, error_body
from api.idempotency import IDEMPOTENCY_KEY_PARAMETER, Outcome, idempotency_key, idempotent
from api.views.base import ApiView, get_or_not_found
from chat.prompt import prompt_build
from chat.services import InvalidMessage, reply_generate
from memory.models import Assistant, EndUser, MemorySpace
from memory.models.tiers import PageSource
from memory.retrieval import RetrievalResult, retrieve
from memory.selectors.people import assistant_get, end_user_get
from memory.services.gdpr import end_user_for_turn
from memory.services.governance import memory_read_record
from memory.services.personal_data import prompt_redactor
from memory.services.turns import InvalidTurn, end_user_closed_check, space_get_or_create, turn_record


def _active(thing: EndUser | Assistant, what: str) -> None:
    if not thing.is_active:
        raise Conflict(f"The {what} {thing.external_id!r} is deactivated.", code="deactivated")


def _field_error(exc: ValueError, fields: tuple[str, ...]) -> ValidationError:
    """A service's message as the error of the field it names ('user_message is empty'), else a general one."""
    name = str(exc).split(" ", 1)[0]
    return ValidationError({name if name in fields else "non_field_errors": [str(exc)]})


class TurnsView(ApiView):
    """Record a turn that the integrator's own agent generated: memory for agents that write their own replies."""

    required_scopes = {"POST": "write"}
    serializer_class = serializers.TurnIn

    @extend_schema(
        operation_id="turns_record",
        request=serializers.TurnIn,
        responses={201: serializers.TurnOut},
        parameters=[IDEMPOTENCY_KEY_PARAMETER],
    )
    def post(self, request):
        data = self.valid(serializers.TurnIn)
        key = idempotency_key(request)
        return idempotent(
            tenant=self.tenant, endpoint="turns", key=key, data=data, run=lambda: self._record(data), atomic=True
        )

    def _record(self, data: dict) -> Outcome:
        assistant = get_or_not_found(assistant_get, tenant=self.tenant, external_id=data["assistant"])
        _active(assistant, "assistant")
        end_user = end_user_for_turn(tenant=self.tenant, external_id=data["user"])
        _active(end_user, "user")
        try:
            recorded = turn_record(
                end_user=end_user,
                assistant=assistant,
                user_message=data["user_message"],
                assistant_reply=data["assistant_reply"],
                at=data.get("at"),
                source=PageSource.API,
                source_ref=f"{self.actor.kind}:{self.actor.id}",
            )
        except InvalidTurn as exc:
            raise _field_error(exc, ("user_message", "assistant_reply")) from None
        body = {"page_id": recorded.page.pk, "queued_updating": recorded.queued_updating}
        return status.HTTP_201_CREATED, body, end_user


def _knowledge(result: RetrievalResult) -> list[dict]:
    ranked = [*result.user_knowledge, *result.assistant_knowledge]
    items = [{"entry": k.entry, "score": k.score} for k in ranked]
    seen = {k.entry.pk for k in ranked}
    items += [{"entry": entry, "score": None} for entry in result.pinned_knowledge if entry.pk not in seen]
    return [
        {"id": i["entry"].pk, "kind": i["entry"].kind, "text": i["entry"].text, "score": i["score"]}
        | {"pinned": i["entry"].pinned}
        for i in items
    ]


def retrieval_body(result: RetrievalResult) -> dict:
    return {
        "query": result.query,
        "query_keywords": result.query_keywords,
        "short_term": serializers.ShortTermPageOut(result.short_term, many=True).data,
        "pages": serializers.RetrievedPageOut(result.pages, many=True).data,
        "segments": serializers.RetrievedSegmentOut(result.segments, many=True).data,
        "profile": serializers.ProfileOut(result.profile).data if result.profile else None,
        "knowledge": _knowledge(result),
        "pinned_pages": serializers.ShortTermPageOut(result.pinned_pages, many=True).data,
        "used": result.used(),
    }


class RetrieveView(ApiView):
    """What memory holds for a query: STM, the best mid-term pages, profile and knowledge. No LLM call."""

    required_scopes = {"POST": "read"}
    serializer_class = serializers.RetrieveIn

    @extend_schema(operation_id="retrieve", request=serializers.RetrieveIn, responses={200: serializers.RetrieveOut})
    def post(self, request):
        data = self.valid(serializers.RetrieveIn)
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=data["user"])
        assistant = get_or_not_found(assistant_get, tenant=self.tenant, external_id=data["assistant"])
        try:
            space = space_get_or_create(end_user=end_user, assistant=assistant)
            visits = data["record_visits"] and not space.paused
            # the embedder gets the query as the model would: without the tenant's mask-in-prompts data
            query = prompt_redactor(tenant=space.tenant_id)(data["query"])
            result = retrieve(space=space, query=query, record_visits=visits)
            memory_read_record(
                actor=self.actor,
                end_user=end_user,
                what="api retrieve",
                target_type="memoryspace",
                target_id=space.pk,
                request_id=self.request_id,
            )
        except Exception:
            # erased meanwhile: its rows are gone, so say so (410) rather than fail
            end_user_closed_check(end_user, inactive_ok=True)
            raise
        body = retrieval_body(result)
        if data["include_prompt"]:
            body["prompt"] = _prompt(space, result)
        return Response(body)


def _prompt(space: MemorySpace, result: RetrievalResult) -> str:
    """The prompt the chat would send for this query: its system message (instructions + memory), then the query,
    with the tenant's mask-in-prompts personal data masked as the chat masks it."""
    mask = prompt_redactor(tenant=space.tenant_id)
    prompt = prompt_build(
        assistant=space.assistant,
        retrieval=result,
        message=result.query,
        now=timezone.now(),
        budget=settings.CHAT_PROMPT_TOKEN_BUDGET,
        mask=mask if mask else None,
    )
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in prompt.messages())


class ChatView(ApiView):
    """Send a message as the end user: the assistant answers from memory, and the turn is stored."""

    required_scopes = {"POST": "write"}
    serializer_class = serializers.ChatIn

    @extend_schema(
        operation_id="chat",
        request=serializers.ChatIn,
        responses={200: serializers.ChatOut},
        parameters=[IDEMPOTENCY_KEY_PARAMETER],
    )
    def post(self, request):
        data = self.valid(serializers.ChatIn)
        key = idempotency_key(request)

        def run() -> Outcome:
            return self._reply(data, key or f"api-{uuid.uuid4()}")  # the chat keys every reply

        return idempotent(tenant=self.tenant, endpoint="chat", key=key, data=data, run=run, atomic=False)

    def _reply(self, data: dict, key: str) -> Outcome:
        assistant = get_or_not_found(assistant_get, tenant=self.tenant, external_id=data["assistant"])
        _active(assistant, "assistant")
        end_user = end_user_for_turn(tenant=self.tenant, external_id=data["user"])
        _active(end_user, "user")
        try:
            result = reply_generate(
                end_user=end_user, assistant=assistant, message=data["message"], idempotency_key=key, actor=self.actor
            )
        except InvalidMessage as exc:
            raise ValidationError({"message": [str(exc)]}) from None
        if result.pending:
            raise Conflict("This message is still being answered; retry later.", code="idempotency_key_in_progress")
        if result.failed:
            message = f"The reply could not be generated: {result.reply.error}"
            return status.HTTP_502_BAD_GATEWAY, error_body("generation_failed", message), end_user
        reply = result.reply
        body = {"reply": result.text, "memory_used": reply.memory_used, "page_id": reply.page_id, "mode": reply.mode}
        return status.HTTP_200_OK, body, end_user
