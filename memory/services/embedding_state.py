"""Guard against mixing vectors of two embedding models: the store names the model its vectors come from."""

from __future__ import annotations

from memory.embeddings import Embedder, get_embedder
from memory.models import EmbeddingState


class EmbeddingMismatch(RuntimeError):
    """Stored vectors come from another model than the configured one."""


_verified: tuple[str, int] | None = None


def embedder_for_store() -> Embedder:
    """The configured embedder, once it is known to match the stored vectors (checked once per process).

    On an empty store, records the embedder as the store's model.
    """
    global _verified
    embedder = get_embedder()
    key = (embedder.name, embedder.dimension)
    if _verified == key:
        return embedder
    state = EmbeddingState.objects.order_by("id").first()
    if state is None:
        EmbeddingState.objects.create(model=embedder.name, dimension=embedder.dimension)
    elif (state.model, state.dimension) != key:
        raise EmbeddingMismatch(
            f"stored vectors come from {state.model} ({state.dimension} dimensions) but the configured embedder is "
            f"{embedder.name} ({embedder.dimension}); run `python manage.py memory_reembed` to re-embed memory"
        )
    _verified = key
    return embedder


def embedding_state_set(*, embedder: Embedder) -> None:
    """Name `embedder` as the model of every stored vector (memory_reembed calls this when it is done)."""
    global _verified
    EmbeddingState.objects.all().delete()
    EmbeddingState.objects.create(model=embedder.name, dimension=embedder.dimension)
    _verified = (embedder.name, embedder.dimension)


def forget_verification() -> None:
    """Check the store again on next use (tests; after memory_reembed in another process)."""
    global _verified
    _verified = None
