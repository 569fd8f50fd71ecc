"""The one LLM seam: the only module in the project that imports `openai`.

`build_client()` makes the OpenAI-compatible client (also used by the embeddings endpoint); `LLMClient.complete()`
sends one chat completion and returns a plain `LLMReply`, or raises `LLMError`, never returning an error's text as a
reply. The rest of the project asks `get_llm()` for the process's client; tests replace it with `use_llm()`.

`options` carries request fields the caller passes to the model unchanged (the memory proxy's tools, tool_choice,
top_p, stop, seed...); a reply may then be tool calls instead of text, returned in OpenAI's shape as plain dicts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, cast

import openai
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from openai.types.chat import ChatCompletionMessageParam

# Local servers (llama.cpp, vLLM, Ollama) ignore the key, but the client refuses to start without one.
PLACEHOLDER_API_KEY = "not-needed"
# 408 timeout, 409 conflict (lock contention) and 429 rate limit can clear on their own; so can any 5xx.
RETRYABLE_STATUS = frozenset({408, 409, 429})
ERROR_TEXT_LIMIT = 300


def build_client(*, base_url: str, api_key: str) -> openai.OpenAI:
    """An OpenAI-compatible client with the project's timeout and retry settings.

    `base_url` is required (an empty one would silently mean api.openai.com); an empty `api_key` is replaced by a
    placeholder for local servers that need none. Builds an object only: no request is sent.
    """
    if not base_url:
        raise ImproperlyConfigured("an OpenAI-compatible base URL is required (set LLM_BASE_URL)")
    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key or PLACEHOLDER_API_KEY,
        timeout=settings.LLM_TIMEOUT,
        max_retries=settings.LLM_MAX_RETRIES,
    )


@dataclass(frozen=True)
class LLMReply:
    """The text of one completion and the tokens it cost; `tool_calls` (OpenAI's shape) when the model called tools,
    the text then being empty or a preamble."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[dict, ...] = ()


@dataclass(frozen=True)
class ToolCallDeltas:
    """One streamed chunk's `delta.tool_calls`, as OpenAI sends them (index, and id, type, name, argument pieces)."""

    deltas: tuple[dict, ...]


class LLMError(Exception):
    """A chat completion failed; `retryable` says whether trying again later can help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def _error_from(exc: openai.OpenAIError) -> LLMError:
    """The LLMError for an openai exception: transport failures, rate limits and 5xx are retryable."""
    detail = str(exc)[:ERROR_TEXT_LIMIT]
    if isinstance(exc, openai.APITimeoutError):
        return LLMError(f"the LLM timed out: {detail}", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(f"the LLM could not be reached: {detail}", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status in RETRYABLE_STATUS or status >= 500
        return LLMError(f"the LLM answered HTTP {status}: {detail}", retryable=retryable)
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMError(f"the LLM sent an invalid response: {detail}", retryable=True)
    # Configuration problems (missing credentials, bad options) do not clear by waiting.
    return LLMError(f"the LLM client failed: {type(exc).__name__}: {detail}", retryable=False)


class LLM(Protocol):
    """What the rest of the project needs from a language model (LLMClient, or a fake in tests)."""

    def complete(
        self,
        messages: list[dict],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ) -> LLMReply: ...

    def stream(
        self,
        messages: list[dict],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ) -> Iterator[str | ToolCallDeltas | LLMReply]: ...


class LLMClient:
    """Chat completions from one model on one OpenAI-compatible endpoint."""

    def __init__(self, client: openai.OpenAI, *, model: str) -> None:
        self.client = client
        self.model = model

    @classmethod
    def from_settings(cls) -> LLMClient:
        """The client that LLM_BASE_URL, LLM_API_KEY and LLM_MODEL describe."""
        if not settings.LLM_BASE_URL:
            raise ImproperlyConfigured("no LLM is configured: set LLM_BASE_URL (empty means offline mode)")
        return cls(build_client(base_url=settings.LLM_BASE_URL, api_key=settings.LLM_API_KEY), model=settings.LLM_MODEL)

    def complete(
        self,
        messages: list[dict],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ) -> LLMReply:
        """One chat completion (the client itself retries transport errors LLM_MAX_RETRIES times).

        `options` go into the request as they are. Raises LLMError for every failure, an empty answer (no text and
        no tool calls) and a refusal included.
        """
        request = _request_options(max_tokens, temperature, options)
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        try:
            completion = self.client.chat.completions.create(model=self.model, messages=_typed(messages), **request)
        except openai.OpenAIError as exc:
            raise _error_from(exc) from exc
        return _reply_from(completion)

    def stream(
        self,
        messages: list[dict],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ) -> Iterator[str | ToolCallDeltas | LLMReply]:
        """One streamed chat completion: its text pieces and tool call deltas as they arrive, then one LLMReply with
        the whole text, the assembled tool calls and the tokens it cost (0 when the server sends no usage). Raises
        LLMError for every failure, an empty answer included; pieces already yielded are then not a reply."""
        request = _request_options(max_tokens, temperature, options)
        request |= {"stream_options": {"include_usage": True}}
        pieces: list[str] = []
        calls: dict[int, dict] = {}
        prompt_tokens = completion_tokens = 0
        try:
            chunks = self.client.chat.completions.create(
                model=self.model, messages=_typed(messages), stream=True, **request
            )
            for chunk in chunks:
                if chunk.usage:
                    prompt_tokens, completion_tokens = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta and delta.tool_calls:
                    deltas = tuple(call.model_dump(exclude_none=True) for call in delta.tool_calls)
                    _tool_calls_merge(calls, deltas)
                    yield ToolCallDeltas(deltas)
                if delta and delta.content:
                    pieces.append(delta.content)
                    yield delta.content
        except openai.OpenAIError as exc:
            raise _error_from(exc) from exc
        text = "".join(pieces)
        if not text.strip() and not calls:
            raise LLMError("the LLM returned an empty answer", retryable=True)
        tool_calls = tuple(calls[index] for index in sorted(calls))
        yield LLMReply(text, prompt_tokens, completion_tokens, tool_calls)


def _typed(messages: list[dict]) -> list[ChatCompletionMessageParam]:
    """The messages as the SDK types them (plain dicts of role and content, which is what its TypedDicts are)."""
    return cast("list[ChatCompletionMessageParam]", messages)


def _request_options(max_tokens: int | None, temperature: float, options: dict | None) -> dict[str, Any]:
    """The request's keyword arguments: the caller's options, over the temperature and token limit given."""
    request: dict[str, Any] = {"temperature": temperature}
    if max_tokens is not None:
        # max_tokens rather than max_completion_tokens: local OpenAI-compatible servers all understand it.
        request["max_tokens"] = max_tokens
    return request | (options or {})


def _tool_calls_merge(calls: dict[int, dict], deltas: tuple[dict, ...]) -> None:
    """Add one chunk's tool call deltas to the calls assembled so far: the first delta of a call brings its id, type
    and name, the following ones pieces of its arguments (OpenAI's streaming shape)."""
    for delta in deltas:
        call = calls.setdefault(delta.get("index", 0), {"id": "", "type": "function", "function": {}})
        call["id"] = delta.get("id") or call["id"]
        call["type"] = delta.get("type") or call["type"]
        function = delta.get("function") or {}
        if function.get("name"):
            call["function"]["name"] = function["name"]
        call["function"]["arguments"] = call["function"].get("arguments", "") + (function.get("arguments") or "")


def _reply_from(completion: Any) -> LLMReply:
    """The LLMReply for a ChatCompletion; an answer with neither text nor tool calls is an error, never an empty
    reply."""
    if not completion.choices:
        raise LLMError("the LLM returned no choices", retryable=True)
    message = completion.choices[0].message
    if getattr(message, "refusal", None):
        raise LLMError("the LLM refused to answer", retryable=False)
    text = message.content or ""
    tool_calls = tuple(call.model_dump(exclude_none=True) for call in getattr(message, "tool_calls", None) or ())
    if not text.strip() and not tool_calls:
        raise LLMError("the LLM returned an empty answer", retryable=True)
    usage = completion.usage  # some local servers send none
    return LLMReply(
        text=text,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        tool_calls=tool_calls,
    )


_llm: LLM | None = None
_llm_lock = threading.Lock()


def get_llm() -> LLM:
    """The process's LLM client, built from settings on first use.

    Raises ImproperlyConfigured when LLM_BASE_URL is empty (callers choose offline steps instead; see memory.steps).
    """
    global _llm
    if _llm is None:
        with _llm_lock:
            if _llm is None:
                _llm = LLMClient.from_settings()
    return _llm


@contextmanager
def use_llm(llm: LLM | None) -> Iterator[LLM | None]:
    """Replace the seam for the duration of a block (tests, benchmarks); None means build afresh from settings."""
    global _llm
    previous = _llm
    _llm = llm
    try:
        yield llm
    finally:
        _llm = previous
