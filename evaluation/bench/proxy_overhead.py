"""What the OpenAI-compatible proxy adds to a chat completion: the same question sent to the same fake model over
HTTP (evaluation.fake_llm) once directly with the `openai` client and once through the proxy (`/v1/chat/completions`
through Django's test client: routing, the token, memory retrieval, the prompt, the model call, recording the turn),
for a random full user each time, in random order within each pair. The overhead is the paired difference. A whole
reply and a streamed one are timed for two users drawn apart (a streamed reply asked right after the same user's whole
one would find their rows in PostgreSQL's cache).

The fake model answers about REPLY_CHARS characters of prose, as a chat model does: recording the turn indexes the
reply's words (twice, `Page.search` and `search_keys`), so its length is part of the proxy's cost, and the fake's
usual 29-character sentence left some of it out (docs/results.md, 29 November 2026). The memory steps that recording
a turn queues run in this process (Celery eager) and are the worker's time, not the request's: the bench's task clock
takes them out, as it does for retrieval. The fake streams without its usual pause between words, so a streamed reply
costs the time to produce it, not to wait for it; first-token figures count to the first piece of text (the proxy's
opening role chunk does not count).
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from time import perf_counter

from django.conf import settings
from django.test import Client

from evaluation import fake_llm
from evaluation.bench.user_pages import HOST
from evaluation.scope import settings_changed
from evaluation.scoring import percentiles
from memory.llm import build_client, use_llm
from memory.models import MemorySpace, Tenant
from memory.services.api_tokens import api_token_create
from memory.services.audit import Actor

PROXY_URL = "/v1/chat/completions"
REPLY_CHARS = 1000  # the fake model's reply: a few paragraphs, as a chat model answers (stored and indexed)
P3 = (50, 95, 99)
NOTE = (
    "proxy minus direct, paired, in ms: the proxy through Django's test client (no network to it), the model a fake "
    "OpenAI-compatible server over real HTTP on loopback in both, answering about 1,000 characters of prose; the "
    "memory steps a turn queues (the worker's) are taken out"
)


@contextmanager
def _model_over_http() -> Iterator[str]:
    """The fake model on a local port, configured as the site's model (the bench's in-process fake set aside)."""
    pause, length, client_log = fake_llm.STREAM_DELAY, fake_llm.REPLY_CHARS, logging.getLogger("httpx")
    level = client_log.level
    fake_llm.STREAM_DELAY, fake_llm.REPLY_CHARS = 0.0, REPLY_CHARS
    client_log.setLevel(logging.WARNING)  # the openai client's httpx logs every request at INFO
    try:
        with fake_llm.fake_llm_server() as base_url, use_llm(None):
            values = {"LLM_BASE_URL": base_url, "LLM_API_KEY": "bench", "LLM_MODEL": fake_llm.MODEL}
            values |= {"LLM_MAX_RETRIES": 0}  # a failed call fails the bench rather than hiding in a retry
            with settings_changed(**values, API_RATE_LIMIT="100000/s", ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, HOST]):
                yield base_url
    finally:
        fake_llm.STREAM_DELAY, fake_llm.REPLY_CHARS = pause, length
        client_log.setLevel(level)


def proxy_overhead(*, tenant: Tenant, spaces: dict[int, MemorySpace], samples: int, rng: random.Random, clock) -> dict:
    """The proxy's added milliseconds, whole reply and first token (streamed), p50 / p95 / p99 over `samples` pairs
    of each; `clock` is the bench's task clock (evaluation.bench.run.TaskClock).

    The whole and the streamed reply of a sample go to two users drawn apart, so that neither is timed on rows the
    other has just brought into PostgreSQL's cache."""
    created = api_token_create(
        tenant=tenant, name="memory_bench proxy", scopes=["write"], actor=Actor.system("memory_bench")
    )
    timings: dict[str, list[float]] = {"whole": [], "first_token": [], "direct": [], "direct_first_token": []}
    ids = sorted(spaces)
    try:
        with _model_over_http() as base_url:
            direct = build_client(base_url=base_url, api_key="bench")
            proxy = Client(HTTP_HOST=HOST, HTTP_AUTHORIZATION=f"Bearer {created.secret}")
            for index in range(samples):
                question = f"What did we say about the plan, question {index}?"
                whole, streamed = spaces[rng.choice(ids)], spaces[rng.choice(ids)]
                to_model = partial(_direct, direct, question)
                to_proxy = partial(_proxied, proxy, whole, question, clock)
                _pair(timings, rng, ("direct", "whole"), to_model, to_proxy)
                to_model = partial(_direct_first_token, direct, question)
                to_proxy = partial(_proxied_first_token, proxy, streamed, question, clock)
                _pair(timings, rng, ("direct_first_token", "first_token"), to_model, to_proxy)
    finally:
        created.token.delete()
    return _figures(timings)


def _pair(timings: dict[str, list[float]], rng: random.Random, keys: tuple[str, str], direct, proxied) -> None:
    """One call to the model directly and one through the proxy, in random order; `keys` name their timings."""
    calls = [(keys[0], direct), (keys[1], proxied)]
    if rng.random() < 0.5:
        calls.reverse()
    for key, call in calls:
        timings[key].append(call())


def _direct(client, question: str) -> float:
    """ms for a whole reply from the model itself."""
    started = perf_counter()
    client.chat.completions.create(model=fake_llm.MODEL, messages=[{"role": "user", "content": question}])
    return (perf_counter() - started) * 1000


def _direct_first_token(client, question: str) -> float:
    """ms to the first streamed piece of text from the model itself."""
    messages = [{"role": "user", "content": question}]
    started, first = perf_counter(), None
    for chunk in client.chat.completions.create(model=fake_llm.MODEL, messages=messages, stream=True):
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = (perf_counter() - started) * 1000
    return first if first is not None else (perf_counter() - started) * 1000


def _body(space: MemorySpace, question: str) -> dict:
    return {"model": fake_llm.MODEL, "messages": [{"role": "user", "content": question}], "user": _user(space)}


def _headers(space: MemorySpace) -> dict:
    return {"HTTP_X_MEMORYOS_ASSISTANT": space.assistant.external_id}


def _proxied(client: Client, space: MemorySpace, question: str, clock) -> float:
    """A whole reply through the proxy, for `space`'s user and assistant, less the memory steps run in-process."""
    body = json.dumps(_body(space, question))
    clock.take_top_level_ms()
    started = perf_counter()
    _ok(client.post(PROXY_URL, body, content_type="application/json", **_headers(space)))
    return (perf_counter() - started) * 1000 - clock.take_top_level_ms()


def _proxied_first_token(client: Client, space: MemorySpace, question: str, clock) -> float:
    """ms to the first streamed piece of text through the proxy, less the memory steps run in-process."""
    body = json.dumps(_body(space, question) | {"stream": True})
    clock.take_top_level_ms()
    started, first = perf_counter(), None
    response = client.post(PROXY_URL, body, content_type="application/json", **_headers(space))
    _ok(response)
    for event in response.streaming_content:
        if first is None and _has_text(event):
            first = (perf_counter() - started) * 1000 - clock.take_top_level_ms()
    clock.take_top_level_ms()  # recording the streamed turn, after its last piece
    return first if first is not None else (perf_counter() - started) * 1000


def _user(space: MemorySpace) -> str:
    return space.end_user.external_id


def _has_text(event: bytes) -> bool:
    """Whether a server-sent event carries a piece of the reply's text."""
    for line in event.decode().splitlines():
        if line.startswith("data: {"):
            choices = json.loads(line[6:]).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                return True
    return False


def _ok(response) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"the proxy answered {response.status_code}, not 200: {response.content[:300]!r}")


def _figures(timings: dict[str, list[float]]) -> dict:
    overhead = [proxy - direct for proxy, direct in zip(timings["whole"], timings["direct"], strict=True)]
    first = [p - d for p, d in zip(timings["first_token"], timings["direct_first_token"], strict=True)]
    return {
        "overhead_ms": percentiles(overhead, P3) | {"samples": len(overhead), "note": NOTE},
        "first_token_overhead_ms": percentiles(first, P3) | {"samples": len(first), "note": NOTE},
        "direct_ms": percentiles(timings["direct"], P3),
        "proxied_ms": percentiles(timings["whole"], P3),
        "direct_first_token_ms": percentiles(timings["direct_first_token"], P3),
        "proxied_first_token_ms": percentiles(timings["first_token"], P3),
    }
