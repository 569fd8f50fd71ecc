"""The OpenAI-compatible memory proxy: point an OpenAI client's `base_url` at `<site>/v1` and memory is added and
recorded with no other change.

`POST /v1/chat/completions` takes OpenAI's request shape, the end user in its standard `user` field and the
assistant in the `X-MemoryOS-Assistant` header (or the tenant's only assistant). It answers through the chat's own
generation loop (chat.services): memory retrieved for the last user message goes into the prompt's delimited memory
block, the caller's own system text and earlier turns follow, the configured model answers (or the offline reply),
and the turn is stored and audited with the token as actor, respecting pause, erasure and deactivation as
/api/v1/chat/ does. With `"stream": true` the answer goes out as server-sent events and the turn is stored only
once the last piece was delivered: a client that hangs up early leaves nothing stored.

Function calling passes through: `tools`, `tool_choice` and `parallel_tool_calls` reach the configured model
unchanged, as do the assistant's `tool_calls` and the `tool` messages of the conversation; the model's tool calls
come back in OpenAI's shape (finish_reason "tool_calls"; streamed as OpenAI's tool_calls deltas). A request ends with
the user's message, or with a tool's result in an exchange under way; memory is retrieved for the user's last message
on every round. What is stored as memory (see chat.services): a reply that calls tools stores nothing, not even text
sent along with the calls; the reply that ends the exchange in words is stored as the turn, the user's last message
and that text; tool results are never stored. Without a configured model the tool fields are refused (400).

Every request field is either used here, passed to the model (sampling, limits, tools: PASSED), allowed only with its
default (DEFAULT_ONLY: `n`, `logprobs`, `modalities`) or refused with a 400 naming it: nothing is silently ignored.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import ParseError

from api.access import Principal
from api.parsers import MAX_DEPTH, json_depth_check
from chat.services import (
    IDEMPOTENCY_KEY_MAX,
    Draft,
    GenerationFailed,
    InvalidMessage,
    ReplyRequest,
    ReplyResult,
    message_check,
    reply_abandon,
    reply_draft,
    reply_pieces,
    reply_store,
)
from integrations.access import bearer_token, principal_for_token
from integrations.errors import Problem, problem_of
from memory.llm import ToolCallDeltas
from memory.services.conversation import conversation_for
from memory.steps import llm_configured
from memory.text import text_refusal

ASSISTANT_HEADER = "X-MemoryOS-Assistant"
OFFLINE_MODEL = "memoryos-offline"
ROLES = ("system", "developer", "user", "assistant", "tool")
NAME_MAX = 64  # a participant's `name`, as long as OpenAI's API has allowed it
OFFLINE_TOOLS = "Tools need a configured model: this MemoryOS answers offline (no LLM_BASE_URL is set)."
TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls")


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _stop(value) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _tools(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(tool, dict) and isinstance(tool.get("function"), dict) and tool["function"].get("name")
        for tool in value
    )


# The request's fields: the proxy's own; passed to the model as they are (each with a check of its type); and
# allowed only with their default value, since the proxy answers with one text choice and no log probabilities.
# Any other field is refused rather than ignored. `user` is the end user's external id: it is not sent on.
CONSUMED = frozenset({"model", "messages", "user", "stream", "stream_options"})
PASSED = {
    "temperature": _number,
    "top_p": _number,
    "max_tokens": _count,
    "max_completion_tokens": _count,
    "stop": _stop,
    "seed": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "presence_penalty": _number,
    "frequency_penalty": _number,
    "logit_bias": lambda value: isinstance(value, dict),
    "response_format": lambda value: isinstance(value, dict),
    "tools": _tools,
    "tool_choice": lambda value: isinstance(value, str | dict),
    "parallel_tool_calls": lambda value: isinstance(value, bool),
}
DEFAULT_ONLY = {"n": 1, "logprobs": False, "modalities": ["text"]}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


class BadRequest(Exception):
    """The request does not follow OpenAI's chat completion shape, or asks what the proxy cannot do; `param` names
    the field, `code` says which of the two."""

    def __init__(self, message: str, param: str | None = None, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def error_response(
    status: int, code: str, message: str, param: str | None = None, retry_after: int | None = None
) -> JsonResponse:
    """An error in OpenAI's shape, which its clients turn into their typed exceptions."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    response = JsonResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="memoryos"'
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def _problem_response(exc: Exception) -> JsonResponse:
    if isinstance(exc, BadRequest):
        return error_response(400, exc.code, str(exc), exc.param)
    problem: Problem | None = problem_of(exc)
    if problem is None:
        raise exc
    return error_response(problem.status, problem.code, problem.message, retry_after=problem.retry_after)


def model_name() -> str:
    return settings.LLM_MODEL if llm_configured() else OFFLINE_MODEL


@csrf_exempt
@require_GET
def models(request: HttpRequest) -> JsonResponse:
    """The one model this proxy answers with: the configured one, or the offline reply."""
    try:
        principal_for_token(bearer_token(request.headers.get("Authorization")), scope="read")
    except Exception as exc:
        return _problem_response(exc)
    model = {"id": model_name(), "object": "model", "created": 0, "owned_by": "memoryos"}
    return JsonResponse({"object": "list", "data": [model]})


@csrf_exempt
@require_POST
def chat_completions(request: HttpRequest) -> HttpResponse:
    """One chat completion answered from memory; the turn is stored (see the module docstring)."""
    try:
        principal = principal_for_token(bearer_token(request.headers.get("Authorization")), scope="write")
        body = _body(request)
        draft = _draft(request, principal, body)
    except Exception as exc:
        return _problem_response(exc)
    if isinstance(draft, ReplyResult):  # a replayed key, or a generation that failed
        if body["stream"] and draft.done:
            return _event_stream(_replayed(draft, body))
        return _finished(draft, body)
    if body["stream"]:
        return _event_stream(_Delivery(draft, body))
    try:
        return _finished(reply_store(draft=draft), body)
    except Exception as exc:  # erased or deactivated while the reply was made
        return _problem_response(exc)


def _event_stream(events) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx would otherwise hold the events back
    return response


def _draft(request: HttpRequest, principal: Principal, body: dict) -> Draft | ReplyResult:
    named = request.headers.get(ASSISTANT_HEADER, "").strip() or None
    parties = conversation_for(tenant=principal.tenant, user=body["user"], assistant=named)
    key = request.headers.get("Idempotency-Key", "").strip() or f"proxy-{uuid.uuid4()}"
    if len(key) > IDEMPOTENCY_KEY_MAX:
        raise BadRequest(f"Idempotency-Key is longer than {IDEMPOTENCY_KEY_MAX} characters.")
    return reply_draft(
        end_user=parties.end_user,
        assistant=parties.assistant,
        space=parties.space,
        policy=parties.policy,
        message=body["message"],
        idempotency_key=key,
        actor=principal.actor,
        request=ReplyRequest(
            conversation=tuple(body["conversation"]),
            message_name=body["message_name"] or "",
            exchange=tuple(body["exchange"]),
            stream=body["stream"],
            options=body["options"],
        ),
    )


# --- The request ---------------------------------------------------------------------------------------------------


def _body(request: HttpRequest) -> dict:
    """The parts of OpenAI's request this proxy uses; raises BadRequest naming the first field that is wrong."""
    data = _json_of(request.body)
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.")
    if refused := _unusable_text(data):
        param, why = refused
        raise BadRequest(f"`{param}` {why}.", param)
    user = data.get("user")
    if not isinstance(user, str) or not user.strip():
        raise BadRequest("Name the end user in the `user` field (their external id).", "user")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("`stream` must be true or false.", "stream")
    options = model_options(data)
    messages = [_message(item, index) for index, item in enumerate(_messages(data))]
    conversation, message, exchange = _split(messages)
    _message_check(message["content"])
    if not llm_configured():
        _offline_check(options, exchange)
    model = data.get("model")
    return {
        "user": user.strip(),
        "stream": stream,
        "message": message["content"],
        "message_name": message.get("name"),
        "conversation": conversation,
        "exchange": exchange,
        "options": options,
        "model": model if isinstance(model, str) and model else model_name(),
    }


def _message_check(text: str) -> None:
    """The user's message within the chat's limits (chat.services.message_check), else BadRequest; checked before
    the end user is created on first use, so a refused request stores nothing. Too long is OpenAI's own code."""
    try:
        message_check(text)
    except InvalidMessage as exc:
        too_long = len(text) > settings.MEMORY_MESSAGE_MAX_CHARS
        raise BadRequest(str(exc), "messages", "string_above_max_length" if too_long else "invalid_request") from None


def _json_of(body: bytes):
    """The body's JSON, nested no deeper than the REST API allows (api.parsers); BadRequest otherwise."""
    try:
        data = json.loads(body or b"null")
    except RecursionError:
        raise BadRequest(f"The JSON is nested more than {MAX_DEPTH} levels deep.") from None
    except ValueError:
        raise BadRequest("The body is not valid JSON.") from None
    try:
        json_depth_check(data)
    except ParseError as exc:
        raise BadRequest(str(exc.detail)) from None
    return data


def _unusable_text(data: dict) -> tuple[str, str] | None:
    """The first text of the request (a key or a value) that can be neither stored nor sent on, as (its path, why):
    a NUL or a lone surrogate, which JSON escapes can carry."""
    stack: list[tuple[object, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in children:
            where = f"{path}.{key}" if path else str(key)
            why = text_refusal(key) if isinstance(key, str) else None
            why = why or (text_refusal(child) if isinstance(child, str) else None)
            if why:
                return where, why
            stack.append((child, where))
    return None


def _offline_check(options: dict, exchange: list[dict]) -> None:
    """Refuse what only a model can answer: the tool fields, and a conversation that ends with a tool's result."""
    asked = next((name for name in TOOL_FIELDS if name in options), None)
    if asked or exchange:
        raise BadRequest(OFFLINE_TOOLS, asked or "messages", "unsupported_parameter")


def model_options(data: dict) -> dict:
    """The request's fields for the model, checked: the passed ones as they are (max_completion_tokens as
    max_tokens, which local servers understand); raises BadRequest for a field this proxy cannot honour."""
    for name, value in data.items():
        if name in CONSUMED or name in PASSED:
            continue
        if name in DEFAULT_ONLY:
            if value not in (None, DEFAULT_ONLY[name]):
                message = f"`{name}` is not supported: only {json.dumps(DEFAULT_ONLY[name])} (the default) is."
                raise BadRequest(message, name, "unsupported_value")
            continue
        raise BadRequest(f"`{name}` is not supported by the MemoryOS proxy.", name, "unsupported_parameter")
    options = {name: data[name] for name in PASSED if data.get(name) is not None}
    for name, value in options.items():
        if not PASSED[name](value):
            raise BadRequest(f"`{name}` has a value of the wrong type.", name, "invalid_value")
    if "max_completion_tokens" in options:
        options["max_tokens"] = options.pop("max_completion_tokens")
    return options


def _messages(data: dict) -> list:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("`messages` must be a non-empty list.", "messages")
    return messages


def _message(item, index: int) -> dict:
    """One message for the model: developer counts as system, text parts are joined, an assistant's tool calls,
    a tool's call id and a participant's `name` are kept as sent; other roles and other parts (images, audio,
    files) are refused."""
    param = f"messages.{index}"
    if not isinstance(item, dict) or item.get("role") not in ROLES:
        raise BadRequest(f"Each message needs a role: one of {', '.join(ROLES)}.", f"{param}.role")
    return _named(_unnamed(item, param), item, param)


def _named(message: dict, item: dict, param: str) -> dict:
    """`message` with the participant's `name` from `item` when it has one (a system message's is not kept: the
    caller's system text joins the one system message)."""
    name = item.get("name")
    if name is None or message["role"] == "system":
        return message
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("A message's `name` must be non-empty text.", f"{param}.name")
    if len(name) > NAME_MAX:
        raise BadRequest(f"A message's `name` is at most {NAME_MAX} characters.", f"{param}.name")
    return message | {"name": name}


def _unnamed(item: dict, param: str) -> dict:
    role = "system" if item["role"] == "developer" else item["role"]
    content = _text(item.get("content"), param)
    if role == "assistant" and item.get("tool_calls") is not None:
        if not isinstance(item["tool_calls"], list) or not all(isinstance(c, dict) for c in item["tool_calls"]):
            raise BadRequest("`tool_calls` must be a list of tool calls.", f"{param}.tool_calls")
        return {"role": role, "content": content, "tool_calls": item["tool_calls"]}
    if content is None:
        raise BadRequest("Each message needs its text in `content`.", f"{param}.content")
    if role == "tool":
        if not isinstance(item.get("tool_call_id"), str) or not item["tool_call_id"]:
            raise BadRequest("A tool's message names the call it answers in `tool_call_id`.", f"{param}.tool_call_id")
        return {"role": role, "tool_call_id": item["tool_call_id"], "content": content}
    return {"role": role, "content": content}


def _text(content, param: str) -> str | None:
    """A message's content as text: a string, or its text parts joined; None when it has none."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest("Each message needs its text in `content`.", f"{param}.content")
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind != "text":
            message = f"Content parts of type {json.dumps(kind)} are not supported: the proxy sends text only."
            raise BadRequest(message, f"{param}.content.{number}", "unsupported_value")
    return "".join(str(part.get("text", "")) for part in content)


def _split(messages: list[dict]) -> tuple[list[dict], dict, list[dict]]:
    """The conversation before the user's last message, that message, and the tool exchange after it (the model's
    tool calls and their results, ending with a result), or BadRequest when the messages end otherwise."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if last is None:
        raise BadRequest("The last message must be the user's (or a tool's result after it).", "messages")
    exchange = messages[last + 1 :]
    if exchange and (exchange[-1]["role"] != "tool" or any(m["role"] not in ("assistant", "tool") for m in exchange)):
        raise BadRequest("The last message must be the user's, or a tool's result after it.", "messages")
    return messages[:last], messages[last], exchange


# --- The response --------------------------------------------------------------------------------------------------


def _finished(result: ReplyResult, body: dict) -> HttpResponse:
    """A completed reply as OpenAI's chat.completion, or the error that stopped it."""
    if result.pending:
        message = "This message is still being answered; retry later."
        return error_response(409, "idempotency_key_in_progress", message)
    if result.failed:
        return error_response(502, "generation_failed", f"The reply could not be generated: {result.reply.error}")
    reply = result.reply
    message = {"role": "assistant", "content": result.text or None}
    if result.tool_calls:
        message["tool_calls"] = list(result.tool_calls)
    finish = "tool_calls" if result.tool_calls else "stop"
    choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    completion = _envelope(result.reply.pk, body, "chat.completion") | {"choices": [choice], "usage": _usage(reply)}
    return JsonResponse(completion)


def _envelope(reply_id: int, body: dict, kind: str) -> dict:
    """What every response and chunk of one reply shares; `memoryos_reply_id` finds it in the console and audit."""
    return {
        "id": f"chatcmpl-memoryos-{reply_id}",
        "object": kind,
        "created": int(time.time()),
        "model": body["model"],
        "memoryos_reply_id": reply_id,
    }


def _usage(reply) -> dict:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


class _Delivery:
    """The reply as OpenAI's chat.completion.chunk events; the turn is stored after the last piece was delivered.

    The server asks for the next event only once the previous one was written, so reaching the store means every
    piece went out. When the client hangs up, the server stops iterating and calls `close()` (StreamingHttpResponse
    hands it to the WSGI server): a draft not settled by then is abandoned, marked failed with no page stored,
    whether its events had started or not.
    """

    def __init__(self, draft: Draft, body: dict) -> None:
        self.draft = draft
        self.envelope = _envelope(draft.reply.pk, body, "chat.completion.chunk")
        self.settled = False  # stored, or marked failed: nothing left to abandon
        self.events = self._events()

    def __iter__(self) -> Iterator[bytes]:
        return self.events

    def close(self) -> None:
        self.events.close()
        if not self.settled:
            self.settled = True
            reply_abandon(draft=self.draft, reason="the client disconnected before the whole reply was delivered")

    def _events(self) -> Iterator[bytes]:
        envelope = self.envelope
        try:
            yield _event(envelope | {"choices": [_delta({"role": "assistant", "content": ""})]})
            for piece in reply_pieces(draft=self.draft):
                delta = {"tool_calls": list(piece.deltas)} if isinstance(piece, ToolCallDeltas) else {"content": piece}
                yield _event(envelope | {"choices": [_delta(delta)]})
            finish = "tool_calls" if self.draft.generated.tool_calls else "stop"
            yield _event(envelope | {"choices": [_delta({}, finish=finish)]})
        except GenerationFailed as exc:
            self.settled = True  # reply_pieces marked it failed already
            yield _event(_error_event("generation_failed", f"The reply could not be generated: {exc}"))
            return
        except Exception:
            self.settled = True
            reply_abandon(draft=self.draft, reason="an unexpected error stopped the reply")
            raise
        self.settled = True  # reply_store stores the turn or marks the reply failed itself
        yield _event(_stored(self.draft, envelope))
        yield b"data: [DONE]\n\n"


def _replayed(result: ReplyResult, body: dict) -> Iterator[bytes]:
    """A reply stored by an earlier request with the same Idempotency-Key, streamed again in one piece."""
    envelope = _envelope(result.reply.pk, body, "chat.completion.chunk")
    yield _event(envelope | {"choices": [_delta({"role": "assistant", "content": result.text})]})
    yield _event(envelope | {"choices": [_delta({}, finish="stop")]})
    yield _event(envelope | {"choices": [], "usage": _usage(result.reply)})
    yield b"data: [DONE]\n\n"


def _stored(draft: Draft, envelope: dict) -> dict:
    """Store the streamed turn: the closing usage chunk, or an error event when it could not be stored."""
    try:
        result = reply_store(draft=draft)
    except Exception as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        return _error_event(problem.code, problem.message)
    if result.failed:
        return _error_event("generation_failed", f"The reply could not be stored: {result.reply.error}")
    return envelope | {"choices": [], "usage": _usage(result.reply)}


def _delta(delta: dict, finish: str | None = None) -> dict:
    return {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}


def _error_event(code: str, message: str) -> dict:
    return {"error": {"message": message, "type": "api_error", "param": None, "code": code}}


def _event(data: dict) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()
