"""A local fake OpenAI-compatible server for load and integration tests: never used by the product.

Serves `/v1/chat/completions` (a short reply, or about REPLY_CHARS characters of prose, at once or word by word with
`stream`; for the memory steps' JSON-mode prompts a JSON object in the shape `memory.steps.model_steps` validates),
`/v1/embeddings` (hashed bag-of-words vectors, so retrieval still ranks by shared words) and `/v1/models`. It runs in
a thread of the process that starts it; `fake_llm_server()` gives its base URL.

Given `tools`, it calls the first one (arguments: the user's last message as `question`), streamed as OpenAI streams
tool calls; once the last message is a tool's result, it answers TOOL_ANSWERED in words. The latest chat
completion requests are kept in `RECEIVED`, so a test can check what reached the model.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evaluation.devsets import PARAGRAPHS
from memory.steps.model_steps import CHAIN_SYSTEM, CHAINS_SYSTEM, KNOWLEDGE_SYSTEM, PROFILE_SYSTEM, PROMOTION_SYSTEM

MODEL = "fake-load-model"
STREAM_DELAY = 0.05  # seconds between streamed words: slow enough for a client to hang up half-way
SHORT_REPLY = "Thanks, I will remember that."
# 0: a chat reply is SHORT_REPLY. Else about this many characters of prose, a few paragraphs drawn by the user's last
# message (evaluation.devsets.PARAGRAPHS), as a chat model answers: memory_bench's proxy sets it, since storing a
# reply costs with its length (its words are indexed twice) and a 29-character one flatters the proxy.
REPLY_CHARS = 0
EMBEDDING_DIMENSION = 64
WORD = re.compile(r"[a-z0-9]{3,}")

CHAIN_ANSWER = {
    "continues": False,
    "chain_summary": "The user talked about their day.",
    "topic_summary": "The user talked about their day.",
    "keywords": ["day", "plans", "load"],
}
PROFILE_ANSWER = {"profile": "The user takes part in a load test."}
KNOWLEDGE_ANSWER = {"user_facts": ["2024-01-01: The user takes part in a load test."], "assistant_facts": []}
ANSWERS = {
    CHAIN_SYSTEM: CHAIN_ANSWER,
    PROFILE_SYSTEM: PROFILE_ANSWER,
    KNOWLEDGE_SYSTEM: KNOWLEDGE_ANSWER,
    PROMOTION_SYSTEM: {**PROFILE_ANSWER, **KNOWLEDGE_ANSWER},
}
NEW_PAGES = re.compile(r"^New pages \((\d+)\):$", re.MULTILINE)
TOOL_CALL_ID = "call_fake_1"
TOOL_ANSWERED = "I have the tool's answer now."
RECEIVED: deque[dict[str, Any]] = deque(maxlen=50)  # the latest chat completion requests, oldest first


def completion_text(request: dict[str, Any]) -> str:
    """The reply to one chat completion request: the step's JSON for a memory step, else a short sentence."""
    messages = request.get("messages") or []
    system = messages[0].get("content", "") if messages and messages[0].get("role") == "system" else ""
    if system == CHAINS_SYSTEM:
        count = NEW_PAGES.search(messages[-1].get("content", ""))
        return json.dumps({"pages": [CHAIN_ANSWER] * int(count.group(1) if count else 1)})
    if system in ANSWERS:
        return json.dumps(ANSWERS[system])
    if messages and messages[-1].get("role") == "tool":
        return TOOL_ANSWERED
    return prose_reply(str(_last_user_content(messages) or ""), REPLY_CHARS) if REPLY_CHARS else SHORT_REPLY


def _last_user_content(messages: list[dict[str, Any]]) -> Any:
    """The content of the last user message as sent ("" when there is none)."""
    return next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")


def prose_reply(question: str, chars: int) -> str:
    """About `chars` characters of prose, whole paragraphs drawn by `question` (so each question gets its own reply,
    and the same question the same one), cut at the last word that fits."""
    rng = random.Random(zlib.crc32(question.encode()))
    paragraphs: list[str] = []
    while sum(len(p) + 2 for p in paragraphs) < chars:
        paragraphs.append(rng.choice(PARAGRAPHS))
    text = "\n\n".join(paragraphs)
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0]


def tool_calls(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The call to the request's first tool, unless the last message already brings a tool's result."""
    messages, tools = request.get("messages") or [], request.get("tools") or []
    if not tools or (messages and messages[-1].get("role") == "tool"):
        return []
    question = _last_user_content(messages)
    function = {"name": tools[0]["function"]["name"], "arguments": json.dumps({"question": question})}
    return [{"id": TOOL_CALL_ID, "type": "function", "function": function}]


def embedding(text: str) -> list[float]:
    """A bag of words hashed into EMBEDDING_DIMENSION buckets (one constant bucket keeps it non-zero)."""
    vector = [0.0] * EMBEDDING_DIMENSION
    vector[0] = 0.1
    for word in WORD.findall(text.lower()):
        vector[zlib.crc32(word.encode()) % EMBEDDING_DIMENSION] += 1.0
    return vector


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    calls = tool_calls(request)
    text = "" if calls else completion_text(request)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    tokens = len(text or json.dumps(calls)) // 4
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", MODEL),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens},
    }


def _embeddings(request: dict[str, Any]) -> dict[str, Any]:
    texts = request.get("input") or []
    texts = [texts] if isinstance(texts, str) else texts
    data = [{"object": "embedding", "index": i, "embedding": embedding(t)} for i, t in enumerate(texts)]
    return {"object": "list", "data": data, "model": request.get("model", MODEL), "usage": {"prompt_tokens": 0}}


def _deltas(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A message as streamed deltas: its text a word at a time; each tool call as OpenAI sends it, the id, type and
    name first with empty arguments, then the arguments in pieces."""
    if message.get("content"):
        words = message["content"].split(" ")
        for index, word in enumerate(words):
            yield {"content": word if index == len(words) - 1 else f"{word} "}
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield {"tool_calls": [head | {"function": {"name": function["name"], "arguments": ""}}]}
        arguments = function["arguments"]
        for start in range(0, len(arguments), 8):
            yield {"tool_calls": [{"index": index, "function": {"arguments": arguments[start : start + 8]}}]}


class FakeOpenAIHandler(BaseHTTPRequestHandler):
    """The three endpoints the LLM seam and the embeddings endpoint use."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as real model servers set it (uvicorn and every asyncio server): the headers and the body go out in
    # two writes, and with Nagle's algorithm the body waited for the client's delayed ACK of the headers, up to 40 ms,
    # on some calls and not others (a whole reply took 44 ms where it takes 1.6)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass  # thousands of requests; the load test's own report counts them

    def _send(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, completion: dict[str, Any]) -> None:
        """The completion as server-sent events, a word at a time, STREAM_DELAY apart, then its usage and [DONE]."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {key: completion[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
        choice = completion["choices"][0]
        for delta in _deltas(choice["message"]):
            self._event(base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            time.sleep(STREAM_DELAY)
        self._event(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
        self._event(base | {"choices": [], "usage": completion["usage"]})
        self.wfile.write(b"data: [DONE]\n\n")

    def _event(self, body: dict[str, Any]) -> None:
        self.wfile.write(f"data: {json.dumps(body)}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "load-test"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path.endswith("/chat/completions"):
            RECEIVED.append(request)
        if self.path.endswith("/chat/completions") and request.get("stream"):
            self._stream(_completion(request))
        elif self.path.endswith("/chat/completions"):
            self._send(200, _completion(request))
        elif self.path.endswith("/embeddings"):
            self._send(200, _embeddings(request))
        else:
            self._send(404, {"error": {"message": "not found"}})


@contextmanager
def fake_llm_server(host: str = "127.0.0.1") -> Iterator[str]:
    """Serve the fake in a daemon thread on a free port; yields its base URL (ending in /v1)."""
    server = ThreadingHTTPServer((host, 0), FakeOpenAIHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-llm", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
