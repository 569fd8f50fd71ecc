"""The generation loop (spec §4): retrieve, build the prompt, generate, record the turn, explain the reply.

Chat writes memory only through memory services: `chat_reply_*` for the reply's record, `turn_record` for the
turn, `reply_memory_record` for the audit of the memory a reply used.

Tool calls (the memory proxy's callers pass `tools` through to the model): a reply that calls tools is not a turn.
Its record is completed with no page and the memory it was given is audited, but nothing is stored as memory, not
even text sent along with the calls; the caller runs the tools and asks again with their results, and the reply
that finally answers in words is stored as the turn: the user's last message and that text. Tool results are never
stored (they are system data, possibly large); they only reach the model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.offline_reply import offline_memory_used, offline_reply
from chat.prompt import Prompt, memory_used, prompt_build
from memory.llm import LLMError, LLMReply, ToolCallDeltas, get_llm
from memory.models import (
    Assistant,
    ChatReply,
    EndUser,
    MemorySpace,
    PersonalDataAction,
    PersonalDataPolicy,
    ReplyStatus,
)
from memory.models.tiers import PageSource, ReplySource
from memory.retrieval.result import RetrievalResult
from memory.retrieval.search import retrieve
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor
from memory.services.governance import reply_memory_record
from memory.services.personal_data import redactor_for
from memory.services.replies import chat_reply_claim, chat_reply_complete, chat_reply_fail
from memory.services.turns import InvalidTurn, end_user_closed_check, space_get_or_create, turn_record
from memory.services.visits import retrieval_visits_record
from memory.steps import llm_configured
from memory.steps.types import Usage

IDEMPOTENCY_KEY_MAX = 100
REPLY_TEMPERATURE = 0.7


class InvalidMessage(ValueError):
    """The message cannot be sent as given; the text says why, in words for the end user."""


@dataclass(frozen=True)
class Generated:
    text: str
    mode: str
    usage: Usage
    used: dict | None = None  # the memory the reply used, when it knows better than the prompt (offline)
    tool_calls: tuple[dict, ...] = ()  # the model called tools: not a turn (see the module docstring)


@dataclass(frozen=True)
class ReplyResult:
    """The outcome of one submit: the reply's record, its text, and the retrieval behind it.

    `replayed` is true when an earlier submit with the same idempotency key owns the reply (done or still
    pending); `retrieval` is None then, and when generation failed before retrieving. `tool_calls` are the model's
    when it called tools (OpenAI's shape); no turn was stored then.
    """

    reply: ChatReply
    text: str
    retrieval: RetrievalResult | None
    replayed: bool = False
    tool_calls: tuple[dict, ...] = ()

    @property
    def done(self) -> bool:
        return self.reply.status == ReplyStatus.DONE

    @property
    def pending(self) -> bool:
        return self.reply.status == ReplyStatus.PENDING

    @property
    def failed(self) -> bool:
        return self.reply.status == ReplyStatus.FAILED


def message_check(message: str) -> str:
    """The message as sent; raises InvalidMessage when it is empty, too long or not text.

    turn_record checks the same limits, but only after the reply is generated, and in words for developers; this
    refuses before anything is claimed or generated, in words for the end user.
    """
    if not isinstance(message, str) or not message.strip():
        raise InvalidMessage("Write a message first.")
    limit = settings.MEMORY_MESSAGE_MAX_CHARS
    if len(message) > limit:
        raise InvalidMessage(f"Your message is {len(message):,} characters long; the limit is {limit:,}.")
    if "\x00" in message:
        raise InvalidMessage("Your message contains a NUL character.")
    return message


def _key_check(key: str) -> str:
    if not isinstance(key, str) or not key.strip() or len(key) > IDEMPOTENCY_KEY_MAX:
        raise InvalidMessage("The form has expired; reload the page and send your message again.")
    return key.strip()


def reply_generate(
    *,
    end_user: EndUser,
    assistant: Assistant,
    message: str,
    idempotency_key: str,
    actor: Actor | None = None,
    now: datetime | None = None,
    space: MemorySpace | None = None,
    policy: PersonalDataPolicy | None = None,
) -> ReplyResult:
    """Answer `message` from memory and store the turn; a second submit with the same key answers nothing new.

    Steps: claim the reply by (space, key), retrieve, build the prompt within CHAT_PROMPT_TOKEN_BUDGET (the
    tenant's mask-in-prompts data masked), generate (one LLM call, or the offline reply), then in one transaction
    record the turn, queue a visit to each segment whose relevant page reached the prompt (unless memory is
    paused), complete the reply and audit the memory it used. An LLM failure marks the reply failed with
    its reason and stores no page; the same key may then be sent again. `conversation` is the caller's own earlier
    messages (the memory proxy; see prompt_build). Raises InvalidMessage for a bad message, InvalidTurn when the
    user and assistant belong to different tenants, and EndUserClosed when the end user is deactivated or erased
    while the reply is made (nothing of it is kept then). A caller that has read the pair's `space` and the tenant's
    `policy` (memory.services.conversation.conversation_for) passes them, saving their queries.
    """
    draft = reply_draft(
        end_user=end_user,
        assistant=assistant,
        message=message,
        idempotency_key=idempotency_key,
        actor=actor,
        now=now,
        space=space,
        policy=policy,
    )
    return draft if isinstance(draft, ReplyResult) else reply_store(draft=draft)


@dataclass(frozen=True)
class ReplyRequest:
    """What a memory proxy's caller asks beyond its message (integrations.proxy); the chat, the REST API and MCP
    ask with the defaults.

    `conversation`: the caller's own earlier messages (see prompt_build); `message_name`: the participant's name
    the caller gave the message; `exchange`: the tool calls and tool results that followed the message in a tool
    exchange under way; `stream`: the reply is generated piece by piece (reply_pieces); `options`: request fields
    for the model as they are (tools, tool_choice, top_p...; `temperature` and `max_tokens` replace the chat's own,
    the latter never above CHAT_REPLY_MAX_TOKENS). The offline reply ignores all but `stream`.
    """

    conversation: tuple[dict, ...] = ()
    message_name: str = ""
    exchange: tuple[dict, ...] = ()
    stream: bool = False
    options: dict = field(default_factory=dict)


@dataclass
class Draft:
    """A reply that is not stored yet: reply_store stores it, reply_abandon drops it.

    `generated` is None while a streamed reply is still to be generated (reply_pieces fills it in).
    """

    space: MemorySpace
    reply: ChatReply
    message: str
    generated: Generated | None
    retrieval: RetrievalResult
    prompt: Prompt
    actor: Actor
    now: datetime
    mode: str
    policy: PersonalDataPolicy  # the tenant's, read once for the whole reply (claim, prompt, turn and audit)
    options: dict = field(default_factory=dict)  # the caller's request fields for the model (ReplyRequest.options)


class GenerationFailed(Exception):
    """The model failed while a streamed reply was generated; the reply is marked failed and nothing is stored."""


def reply_draft(
    *,
    end_user: EndUser,
    assistant: Assistant,
    message: str,
    idempotency_key: str,
    actor: Actor | None = None,
    now: datetime | None = None,
    request: ReplyRequest | None = None,
    space: MemorySpace | None = None,
    policy: PersonalDataPolicy | None = None,
) -> Draft | ReplyResult:
    """The first half of reply_generate: claim, retrieve, build the prompt and generate, storing nothing yet.

    Returns a Draft to pass to reply_store (or reply_abandon when whoever asked has gone away), or the final
    ReplyResult when there is nothing to store: a replayed key, or a failed generation (marked failed already).
    With `request.stream`, a model's reply is not generated yet: reply_pieces generates it piece by piece. The
    memory proxy passes the rest of its caller's `request` (ReplyRequest), and the pair's `space` and the tenant's
    `policy` when it has read them (saving their queries). Raises as reply_generate does.
    """
    message, idempotency_key = message_check(message), _key_check(idempotency_key)
    request = request or ReplyRequest()
    if not (end_user.is_active and assistant.is_active):
        raise InvalidMessage("This conversation is closed: the account or the assistant has been deactivated.")
    try:
        if space is None or (space.end_user_id, space.assistant_id) != (end_user.pk, assistant.pk):
            space = space_get_or_create(end_user=end_user, assistant=assistant)
        policy = policy or personal_data_policy_or_default(tenant=end_user.tenant_id)
        reply, claimed = chat_reply_claim(
            space=space, idempotency_key=idempotency_key, user_message=message, policy=policy
        )
    except Exception:
        end_user_closed_check(end_user)  # erased meanwhile: its rows are gone, so say so rather than fail
        raise
    if not claimed:
        page_text = reply.page.assistant_reply if reply.page else ""  # no query when page_id is None
        return ReplyResult(reply=reply, text=page_text, retrieval=None, replayed=True)
    now = now or timezone.now()
    mode = "llm" if llm_configured() else "offline"
    try:
        # the tenant's mask-in-prompts (and do-not-store) data reaches neither the model nor the embedder
        mask = redactor_for(policy, PersonalDataAction.MASK_PROMPTS)
        retrieval = retrieve(space=space, query=mask(message), record_visits=False, now=now)
        prompt = prompt_build(
            assistant=assistant,
            retrieval=retrieval,
            message=message,
            now=now,
            budget=settings.CHAT_PROMPT_TOKEN_BUDGET,
            conversation=request.conversation,
            message_name=request.message_name,
            exchange=request.exchange,
            mask=mask if mask else None,
        )
        options = request.options
        streamed = request.stream and mode == "llm"
        generated = None if streamed else _generate(prompt, retrieval, mode, now, options, space.paused)
    except Exception as exc:
        return _failed(reply, mode, end_user, exc)
    actor = actor or Actor.end_user(end_user)
    return Draft(space, reply, message, generated, retrieval, prompt, actor, now, mode, policy, options)


def reply_pieces(*, draft: Draft) -> Iterator[str | ToolCallDeltas]:
    """The draft's reply as text pieces and tool call deltas, as the model streams them (an offline reply a word at a
    time).

    Once exhausted, `draft.generated` holds the whole reply, ready for reply_store. A model failure marks the reply
    failed (nothing is stored; the key may be sent again) and raises GenerationFailed.
    """
    if draft.generated is not None:
        words = draft.generated.text.split(" ")
        yield from (word if i == len(words) - 1 else f"{word} " for i, word in enumerate(words))
        return
    try:
        for piece in get_llm().stream(draft.prompt.messages(), **_model_arguments(draft.options)):
            if isinstance(piece, LLMReply):
                draft.generated = _generated(piece, draft.mode)
            else:
                yield piece
    except LLMError as exc:
        chat_reply_fail(reply=draft.reply, mode=draft.mode, error=str(exc), usage=Usage(calls=1))
        raise GenerationFailed(str(exc)) from exc


def reply_store(*, draft: Draft) -> ReplyResult:
    """The second half of reply_generate: record the turn, complete the reply and audit the memory it used.

    A turn that cannot be stored marks the reply failed (nothing is kept); raises EndUserClosed when the end user
    was erased or deactivated meanwhile. A streamed draft is stored once reply_pieces is exhausted.
    """
    space, generated = draft.space, draft.generated
    if generated is None:
        raise ValueError("the draft's reply has not been generated yet: exhaust reply_pieces first")
    if generated.tool_calls:
        return _tool_calls_store(draft, generated)
    try:
        text = _store(draft, generated)
    except Exception as exc:
        return _failed(draft.reply, generated.mode, space.end_user, exc)
    return ReplyResult(reply=draft.reply, text=text, retrieval=draft.retrieval)


def _tool_calls_store(draft: Draft, generated: Generated) -> ReplyResult:
    """Complete a reply that called tools: no turn, no visits, only the reply's record and the audit of the memory
    the model was given (see the module docstring)."""
    used = memory_used(draft.retrieval, draft.prompt)
    dropped = [item.as_dropped() for item in draft.prompt.dropped]
    try:
        with transaction.atomic():
            chat_reply_complete(
                reply=draft.reply, page=None, mode=draft.mode, memory_used=used, dropped=dropped, usage=generated.usage
            )
            reply_memory_record(
                space=draft.space,
                used={**used, "dropped": dropped},
                actor=draft.actor,
                request_id=f"chat-reply-{draft.reply.pk}",
                policy=draft.policy,
            )
    except Exception as exc:  # erased meanwhile: raised as the refusal it is
        return _failed(draft.reply, draft.mode, draft.space.end_user, exc)
    return ReplyResult(draft.reply, generated.text, draft.retrieval, tool_calls=generated.tool_calls)


def reply_abandon(*, draft: Draft, reason: str) -> None:
    """Drop a draft whose asker went away (a streaming client that disconnected): the reply is marked failed with
    `reason`, nothing of the turn is stored, and the same key may be sent again."""
    usage = draft.generated.usage if draft.generated else Usage(calls=1)
    chat_reply_fail(reply=draft.reply, mode=draft.mode, error=reason, usage=usage)


def _failed(reply: ChatReply, mode: str, end_user: EndUser, exc: Exception) -> ReplyResult:
    """Mark `reply` failed: with its reason for a _Failed (answered as a failed result), or generically for a bug,
    which is raised again after (an erasure under way explains such a failure: it is raised as a refusal)."""
    if isinstance(exc, _Failed):
        chat_reply_fail(reply=reply, mode=mode, error=str(exc), usage=exc.usage)
        return ReplyResult(reply=reply, text="", retrieval=None)
    # A bug must not leave the key pending for ever: mark it failed so it can be retried, then let it surface
    # (if even that write fails, the original error is the one worth seeing).
    with contextlib.suppress(Exception):
        chat_reply_fail(reply=reply, mode=mode, error="an unexpected error stopped the reply", usage=Usage())
    end_user_closed_check(end_user)
    raise exc


def _visits_queue(space: MemorySpace, retrieval: RetrievalResult, prompt: Prompt, now: datetime) -> list[int]:
    """A visit to each segment that supplied a relevant page the prompt kept; none while memory is paused."""
    if space.paused:
        return []
    kept = {item.id for item in prompt.kept if item.kind == "page"}
    return retrieval_visits_record(result=retrieval, now=now, page_ids=kept)


class _Failed(Exception):
    def __init__(self, message: str, usage: Usage) -> None:
        super().__init__(message)
        self.usage = usage


def _model_arguments(options: dict) -> dict:
    """The seam's arguments for a reply: the caller's temperature and token limit (never above
    CHAT_REPLY_MAX_TOKENS) or the chat's own, and the caller's other options as they are."""
    options = dict(options)
    temperature = options.pop("temperature", None)
    limit, asked = settings.CHAT_REPLY_MAX_TOKENS, options.pop("max_tokens", None)
    return {
        "max_tokens": min(asked, limit) if asked else limit,
        "temperature": REPLY_TEMPERATURE if temperature is None else temperature,
        "options": options,
    }


def _generated(answer: LLMReply, mode: str) -> Generated:
    usage = Usage(calls=1, prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens)
    return Generated(text=answer.text.strip(), mode=mode, usage=usage, tool_calls=answer.tool_calls)


def _generate(
    prompt: Prompt, retrieval: RetrievalResult, mode: str, now: datetime, options: dict, paused: bool = False
) -> Generated:
    """One generation call through the LLM seam, or the offline reply built from the memory the prompt kept.

    The offline reply records as used only the memory it mentions, best first; while memory is `paused` it does not
    promise to keep the message.
    """
    if mode == "offline":
        dropped = {item.key for item in prompt.dropped}
        reply = offline_reply(retrieval=retrieval, dropped=dropped, now=now, paused=paused)
        used = offline_memory_used(reply, retrieval=retrieval, tokens=prompt.tokens, budget=prompt.budget)
        return Generated(text=reply.text, mode=mode, usage=Usage(), used=used)
    try:
        answer = get_llm().complete(prompt.messages(), **_model_arguments(options))
    except LLMError as exc:
        raise _Failed(str(exc), Usage(calls=1)) from exc
    return _generated(answer, mode)


def _store(draft: Draft, generated: Generated) -> str:
    """Record the turn, count the visits, complete the reply and audit the memory it used, all or nothing."""
    space, reply, retrieval, prompt = draft.space, draft.reply, draft.retrieval, draft.prompt
    used = generated.used if generated.used is not None else memory_used(retrieval, prompt)
    dropped = [item.as_dropped() for item in prompt.dropped]
    try:
        with transaction.atomic():
            used["visited_segment_ids"] = _visits_queue(space, retrieval, prompt, draft.now)
            recorded = turn_record(
                end_user=space.end_user,
                assistant=space.assistant,
                user_message=draft.message,
                assistant_reply=generated.text,
                at=draft.now,
                source=PageSource.CHAT,
                source_ref=f"chat-reply:{reply.pk}",
                # the offline reply is system text: the transcript keeps it, memory must not learn from it
                reply_source=ReplySource.SYSTEM if generated.mode == "offline" else ReplySource.ASSISTANT,
                policy=draft.policy,
                space=space,
            )
            chat_reply_complete(
                reply=reply,
                page=recorded.page,
                mode=generated.mode,
                memory_used=used,
                dropped=dropped,
                usage=generated.usage,
            )
            reply_memory_record(
                space=space,
                used={**used, "dropped": dropped},
                actor=draft.actor,
                request_id=f"chat-reply-{reply.pk}",
                policy=draft.policy,
            )
    except InvalidTurn as exc:
        raise _Failed(f"the reply could not be stored: {exc}", generated.usage) from exc
    return recorded.page.assistant_reply  # as stored: without the data the tenant's policy says not to store
