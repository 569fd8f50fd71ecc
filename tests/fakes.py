"""The two outside seams, faked for tests only: a deterministic embedder and a scripted LLM."""

from __future__ import annotations

import hashlib
import re

import numpy as np

WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Bag of words hashed into a fixed number of dimensions: texts sharing words have a high cosine."""

    name = "test:hashing"

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self.calls = 0

    def _bucket(self, word: str) -> int:
        return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % self.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                if len(word) > 2:
                    vectors[row, self._bucket(word)] += 1.0
            if not vectors[row].any():
                vectors[row, 0] = 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / norms
