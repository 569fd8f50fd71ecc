"""Re-embedding every stored vector with the configured model (after EMBEDDING_MODEL or EMBEDDING_BACKEND changes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from django.db import transaction

from memory.embeddings import Embedder
from memory.models import KnowledgeEntry, Page, Segment
from memory.models.tiers import topic_vector_of
from memory.services.embedding_state import embedding_state_set
from memory.services.passages import page_passages_set, page_vectors_embed

BATCH = 256


def _reembed_pages(embedder: Embedder, progress: Callable[[str, int], None]) -> int:
    done = 0
    ids = list(Page.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), BATCH):
        pages = list(Page.objects.filter(id__in=ids[start : start + BATCH]).without_vectors())
        vectors = page_vectors_embed(embedder=embedder, texts=[p.memory_text for p in pages])
        for page, embedded in zip(pages, vectors, strict=True):
            page.embedding = embedded.vector
            page.topic_embedding = None  # the page's own vector is its topic vector again (Page.topic_vector)
        Page.objects.bulk_update(pages, ["embedding", "topic_embedding"])
        page_passages_set(pages=pages, vectors=vectors)
        done += len(pages)
        progress("pages", done)
    return done


def _reembed_segments(progress: Callable[[str, int], None]) -> int:
    """A segment's vector is the centroid of its pages' topic vectors (see memory.services.updating)."""
    done = 0
    for segment in Segment.objects.without_vectors().iterator(chunk_size=BATCH):
        topics = segment.pages.annotate(topic=topic_vector_of()).values_list("topic", flat=True)
        vectors = [v for v in topics if v is not None]
        if vectors:
            centroid = np.mean(np.array(vectors, dtype=np.float32), axis=0)
            centroid /= np.linalg.norm(centroid) or 1.0
            Segment.objects.filter(pk=segment.pk).update(embedding=centroid)
        done += 1
    progress("segments", done)
    return done


def _reembed_knowledge(embedder: Embedder, progress: Callable[[str, int], None]) -> int:
    entries = list(KnowledgeEntry.objects.without_vectors().order_by("id"))
    for start in range(0, len(entries), BATCH):
        batch = entries[start : start + BATCH]
        for entry, vector in zip(batch, embedder.embed([e.text for e in batch]), strict=True):
            entry.embedding = vector
        KnowledgeEntry.objects.bulk_update(batch, ["embedding"])
    progress("knowledge entries", len(entries))
    return len(entries)


def memory_reembed(*, embedder: Embedder, progress: Callable[[str, int], None] = lambda what, n: None) -> dict:
    """Recompute every page, passage, segment and knowledge vector with `embedder` in one transaction; record it.

    Offline mode's topic vectors are page vectors, so they are refreshed exactly; an LLM-written topic summary is
    re-embedded as part of the page (its exact text vector is not kept). Safe to run again: it is all or nothing.
    """
    with transaction.atomic():
        counts = {
            "pages": _reembed_pages(embedder, progress),
            "segments": _reembed_segments(progress),
            "knowledge": _reembed_knowledge(embedder, progress),
        }
        embedding_state_set(embedder=embedder)
    return counts
