"""The vectors of pages and of the passages of long pages, embedded together and stored with the page's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory.embeddings import Embedder
from memory.models import Page, PagePassage
from memory.text import passage_spans


@dataclass(frozen=True)
class PageVectors:
    """A page's own vector and its passages' (start, end, vector), embedded from one text."""

    vector: np.ndarray
    passages: list[tuple[int, int, np.ndarray]]


def page_vectors_embed(*, embedder: Embedder, texts: Sequence[str]) -> list[PageVectors]:
    """Embed each page text and the passages of the long ones (`memory.text.passage_spans`) in one embedder call.

    Writes nothing: the caller stores the page vectors with its own write, then the passages (`page_passages_set`).
    """
    spans = [passage_spans(text) for text in texts]
    inputs = [*texts, *(text[start:end] for text, found in zip(texts, spans, strict=True) for start, end in found)]
    vectors = embedder.embed(inputs) if inputs else np.empty((0, 0))
    result: list[PageVectors] = []
    at = len(texts)
    for index, found in enumerate(spans):
        passages = [(start, end, vectors[at + i]) for i, (start, end) in enumerate(found)]
        result.append(PageVectors(vector=vectors[index], passages=passages))
        at += len(found)
    return result


def page_passages_set(*, pages: Sequence[Page], vectors: Sequence[PageVectors], replace: bool = True) -> int:
    """Store the passages of `pages` (each with its `PageVectors`); returns how many were stored.

    With `replace` the pages' earlier passages go first (their text or the embedder changed); pages never embedded
    before (placement, import) pass False and cost no statement unless one of them is long. Idempotent.
    """
    if replace:
        PagePassage.objects.filter(page_id__in=[page.pk for page in pages]).delete()
    rows = [
        PagePassage(page_id=page.pk, space_id=page.space_id, start=start, end=end, embedding=vector)
        for page, found in zip(pages, vectors, strict=True)
        for start, end, vector in found.passages
    ]
    if rows:
        PagePassage.objects.bulk_create(rows)
    return len(rows)
