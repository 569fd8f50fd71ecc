"""The two outside seams, faked for tests only: a deterministic embedder and a scripted LLM."""

from __future__ import annotations

import copy
import hashlib
import re

import numpy as np

from memory.llm import LLMReply

WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Bag of words hashed into a fixed number of dimensions: texts sharing words have a high cosine.

    With `reads_chars`, only the start of each text counts, as MiniLM reads only its first ~256 word pieces.
    """

    name = "test:hashing"

    def __init__(self, dimension: int = 256, reads_chars: int | None = None) -> None:
        self.dimension = dimension
        self.reads_chars = reads_chars
        self.calls = 0
        self.inputs: list[str] = []  # every text it was asked to embed, in order

    def _bucket(self, word: str) -> int:
        return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % self.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.inputs.extend(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text[: self.reads_chars].lower()):
                if len(word) > 2:
                    vectors[row, self._bucket(word)] += 1.0
            if not vectors[row].any():
                vectors[row, 0] = 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / norms


class ScriptExhausted(AssertionError):
    """The code under test asked the scripted LLM more often than the test expected."""


class ScriptedLLM:
    """Answers `complete()` with scripted replies in order: a string is the reply text, an LLMReply is returned as it
    is (tool calls, say), an Exception is raised.

    Records every request: `.calls` holds each `messages` list received, `.requests` also the keyword options.
    """

    def __init__(self, replies: list[str | Exception]) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict]] = []
        self.requests: list[dict] = []

    @property
    def remaining(self) -> int:
        return len(self.replies) - len(self.calls)

    def complete(
        self,
        messages: list[dict],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ) -> LLMReply:
        recorded = copy.deepcopy(messages)
        self.calls.append(recorded)
        self.requests.append(
            {
                "messages": recorded,
                "json_mode": json_mode,
                "max_tokens": max_tokens,
                "temperature": temperature,
                "options": options or {},
            }
        )
        if len(self.calls) > len(self.replies):
            raise ScriptExhausted(f"the LLM was called {len(self.calls)} times; the script has {len(self.replies)}")
        reply = self.replies[len(self.calls) - 1]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, LLMReply):
            return reply
        prompt = sum(len(str(message.get("content", ""))) for message in messages)
        return LLMReply(text=reply, prompt_tokens=prompt // 4, completion_tokens=len(reply) // 4)

    def stream(
        self,
        messages: list[dict],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ):
        """The next scripted reply, word by word, then its LLMReply (as LLMClient.stream)."""
        reply = self.complete(messages, max_tokens=max_tokens, temperature=temperature, options=options)
        words = reply.text.split(" ")
        for index, word in enumerate(words):
            yield word if index == len(words) - 1 else f"{word} "
        yield reply
