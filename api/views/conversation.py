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
from memory.models import MemorySpace, Tenant
from memory.models.tiers import PageSource
from memory.retrieval.result import RetrievalResult
from memory.selectors.people import assistant_get, end_user_get
from memory.services.conversation import Conversation, PartyInactive, conversation_for
from memory.services.personal_data import prompt_redactor
from memory.services.recall import memory_retrieve
from memory.services.turns import InvalidTurn, turn_record


def _parties(tenant: Tenant, data: dict) -> Conversation:
    """The request's end user and assistant, their space and the tenant's policy (see conversation_for): 404 for an
    unknown assistant, 409 for a deactivated party, 410 for an erased user."""
    try:
        return get_or_not_found(conversation_for, tenant=tenant, user=data["user"], assistant=data["assistant"])
    except PartyInactive as exc:
        raise Conflict(str(exc), code="deactivated") from None


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
        parties = _parties(self.tenant, data)
        end_user = parties.end_user
        try:
            recorded = turn_record(
                end_user=end_user,
                assistant=parties.assistant,
                space=parties.space,
                policy=parties.policy,
                user_message=data["user_message"],
                assistant_reply=data["assistant_reply"],
                at=data.get("at"),
                source=PageSource.API,
                source_ref=f"{self.actor.kind}:{self.actor.id}",
            )
        except InvalidTurn as exc:
            raise _field_error(exc, ("user_message", "assistant_reply", "at")) from None
        body = {"page_id": recorded.page.pk, "queued_updating": recorded.queued_updating}
        return status.HTTP_201_CREATED, body, end_user


class RetrieveView(ApiView):
    """What memory holds for a query: STM, the best mid-term pages, profile and knowledge. No LLM call."""

    required_scopes = {"POST": "read"}
    serializer_class = serializers.RetrieveIn

    @extend_schema(operation_id="retrieve", request=serializers.RetrieveIn, responses={200: serializers.RetrieveOut})
    def post(self, request):
        data = self.valid(serializers.RetrieveIn)
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=data["user"])
        assistant = get_or_not_found(assistant_get, tenant=self.tenant, external_id=data["assistant"])
        space, result = memory_retrieve(
            end_user=end_user,
            assistant=assistant,
            query=data["query"],
            record_visits=data["record_visits"],
            actor=self.actor,
            what="api retrieve",
            request_id=self.request_id,
        )
        body = serializers.retrieval_out(result)
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
        parties = _parties(self.tenant, data)
        end_user = parties.end_user
        try:
            result = reply_generate(
                end_user=end_user,
                assistant=parties.assistant,
                space=parties.space,
                policy=parties.policy,
                message=data["message"],
                idempotency_key=key,
                actor=self.actor,
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
