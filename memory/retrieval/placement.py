"""Placement's vector reads: the segments nearest a page being placed, and the page that best sums up a segment
(memory.services.updating)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import FloatField, Value
from django.db.models.functions import Coalesce
from pgvector.django import CosineDistance

from memory.models import Page, Segment
from memory.models.tiers import topic_vector_of


def _similarity(vector: np.ndarray):
    """cosine similarity = 1 − cosine distance; rows without a vector score 0 (the ORM's twin of rows.COSINE)."""
    return Coalesce(Value(1.0) - CosineDistance("embedding", vector), Value(0.0), output_field=FloatField())


@dataclass(frozen=True)
class SegmentCandidate:
    segment_id: int
    cosine: float
    keywords: list[str]


def segment_candidates(*, space_id: int, vector: np.ndarray, limit: int = 20) -> list[SegmentCandidate]:
    """The segments of one space nearest to `vector` by cosine of their summary embeddings."""
    rows = (
        Segment.objects.filter(space_id=space_id, embedding__isnull=False)
        .annotate(cosine=_similarity(vector))
        .order_by("-cosine", "id")
        .values_list("id", "cosine", "keywords")[:limit]
    )
    return [SegmentCandidate(segment_id=i, cosine=float(c), keywords=list(k)) for i, c, k in rows]


def segment_central_summary(*, segment_id: int, centroid: np.ndarray) -> str | None:
    """The topic summary of the segment's page nearest to the segment's centroid (an extractive summary)."""
    return (
        Page.objects.annotate(topic=topic_vector_of())
        .filter(segment_id=segment_id, topic__isnull=False)
        .exclude(topic_summary="")
        .order_by(CosineDistance("topic", centroid), "seq")
        .values_list("topic_summary", flat=True)
        .first()
    )
