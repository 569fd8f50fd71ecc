"""Retrieval from all three tiers for a query, and every other piece of vector SQL in the project.

Vector search over one user's rows is an exact scan (MemoryOS bounds them: 200 segments, 100 + 100 knowledge
entries), so recall is exact and no approximate index is needed. Retrieval makes no LLM call and a bounded number
of queries whatever the size of memory (pinned in tests/memory/test_retrieval.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db.models import FloatField, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from pgvector.django import CosineDistance

from memory.heat import f_score, jaccard
from memory.models import KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.models.tiers import KnowledgeKind, Tier
from memory.services.embedding_state import embedder_for_store
from memory.services.heat_samples import segment_visits_record
from memory.text import extract_keywords


def _similarity(vector: np.ndarray):
    """cosine similarity = 1 − cosine distance; rows without a vector score 0."""
    return Coalesce(Value(1.0) - CosineDistance("embedding", vector), Value(0.0), output_field=FloatField())


# --- Used by updating (memory.services.updating) ----------------------------------------------------------------


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
        Page.objects.filter(segment_id=segment_id, topic_embedding__isnull=False)
        .exclude(topic_summary="")
        .order_by(CosineDistance("topic_embedding", centroid), "seq")
        .values_list("topic_summary", flat=True)
        .first()
    )


# --- Retrieval for a query ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoredSegment:
    segment: Segment
    score: float
    cosine: float
    keyword_overlap: float


@dataclass(frozen=True)
class ScoredPage:
    page: Page
    score: float


@dataclass(frozen=True)
class ScoredKnowledge:
    entry: KnowledgeEntry
    score: float


@dataclass
class RetrievalResult:
    """Exactly what retrieval found for one query, so a reply can be explained later."""

    query: str
    query_keywords: list[str]
    short_term: list[Page] = field(default_factory=list)
    segments: list[ScoredSegment] = field(default_factory=list)
    pages: list[ScoredPage] = field(default_factory=list)
    profile: ProfileVersion | None = None
    user_knowledge: list[ScoredKnowledge] = field(default_factory=list)
    assistant_knowledge: list[ScoredKnowledge] = field(default_factory=list)
    pinned_segments: list[Segment] = field(default_factory=list)
    pinned_pages: list[Page] = field(default_factory=list)
    pinned_knowledge: list[KnowledgeEntry] = field(default_factory=list)
    visited_segment_ids: list[int] = field(default_factory=list)

    def used(self) -> dict:
        """The ids and scores of everything used, as JSON-ready data."""
        return {
            "short_term_page_ids": [p.id for p in self.short_term],
            "segments": [{"id": s.segment.id, "score": round(s.score, 4)} for s in self.segments],
            "pages": [{"id": p.page.id, "score": round(p.score, 4)} for p in self.pages],
            "profile_version_id": self.profile.id if self.profile else None,
            "user_knowledge": [{"id": k.entry.id, "score": round(k.score, 4)} for k in self.user_knowledge],
            "assistant_knowledge": [{"id": k.entry.id, "score": round(k.score, 4)} for k in self.assistant_knowledge],
            "pinned_segment_ids": [s.id for s in self.pinned_segments],
            "pinned_page_ids": [p.id for p in self.pinned_pages],
            "pinned_knowledge_ids": [k.id for k in self.pinned_knowledge],
            "visited_segment_ids": list(self.visited_segment_ids),
        }


def retrieve(
    *, space: MemorySpace, query: str, record_visits: bool = True, now: datetime | None = None
) -> RetrievalResult:
    """STM + the top m segments' top k pages + profile + top user/assistant knowledge + pinned memories.

    Side effect (unless `record_visits` is False, as in the operator's context preview): each segment that
    supplied a page gets N_visit += 1, a new last-touch time and a heat sample.
    """
    now = now or timezone.now()
    result = RetrievalResult(query=query, query_keywords=extract_keywords(query))
    result.short_term = list(Page.objects.filter(space=space, tier=Tier.SHORT_TERM).without_vectors().order_by("seq"))
    result.profile = ProfileVersion.objects.filter(end_user_id=space.end_user_id).order_by("-number").first()
    if result.profile is not None and result.profile.stale:
        result.profile = None  # derived from forgotten or corrected memory: withheld until the worker re-derives it
    _retrieve_pinned(space, result)
    if query.strip():
        vector = embedder_for_store().embed([query])[0]
        segment_rows = _score_segments(space, vector, result.query_keywords)
        _retrieve_pages(space, vector, segment_rows, result)
        _retrieve_knowledge(space, vector, result)
        if record_visits:
            supplied = {scored.page.segment_id for scored in result.pages}
            result.visited_segment_ids = segment_visits_record(segment_ids=supplied, now=now)
    return result


def _score_segments(space: MemorySpace, vector: np.ndarray, query_keywords: list[str]) -> dict[int, dict]:
    """F(query) for every segment of the space (at most MTM capacity rows), best first."""
    rows = Segment.objects.filter(space=space).annotate(cosine=_similarity(vector)).values("id", "keywords", "cosine")
    for row in rows:
        row["jaccard"] = jaccard(query_keywords, row["keywords"])
        row["score"] = f_score(row["cosine"], query_keywords, row["keywords"])
    ranked = sorted(rows, key=lambda r: (-r["score"], r["id"]))[: settings.MEMORY_RETRIEVE_SEGMENTS]
    return {row["id"]: row for row in ranked}


def _retrieve_pages(space: MemorySpace, vector: np.ndarray, segment_rows: dict[int, dict], result) -> None:
    if not segment_rows:
        return
    segments = Segment.objects.filter(id__in=segment_rows).without_vectors().in_bulk()
    result.segments = [
        ScoredSegment(segment=segments[sid], score=row["score"], cosine=row["cosine"], keyword_overlap=row["jaccard"])
        for sid, row in segment_rows.items()
        if sid in segments
    ]
    pages = (
        Page.objects.filter(segment_id__in=list(segment_rows))
        .annotate(score=_similarity(vector))
        .without_vectors()
        .order_by("-score", "-seq")[: settings.MEMORY_RETRIEVE_PAGES]
    )
    result.pages = [ScoredPage(page=p, score=float(p.score)) for p in pages]
    for scored in result.pages:
        scored.page.segment = segments.get(scored.page.segment_id)


def _retrieve_knowledge(space: MemorySpace, vector: np.ndarray, result: RetrievalResult) -> None:
    limit = settings.MEMORY_RETRIEVE_KNOWLEDGE
    user = KnowledgeEntry.objects.filter(end_user_id=space.end_user_id, kind=KnowledgeKind.USER)
    assistant = KnowledgeEntry.objects.filter(
        end_user_id=space.end_user_id, assistant_id=space.assistant_id, kind=KnowledgeKind.ASSISTANT
    )
    for queryset, target in ((user, result.user_knowledge), (assistant, result.assistant_knowledge)):
        scored = queryset.annotate(score=_similarity(vector)).without_vectors().order_by("-score", "-id")[:limit]
        target.extend(ScoredKnowledge(entry=e, score=float(e.score)) for e in scored)


def _retrieve_pinned(space: MemorySpace, result: RetrievalResult) -> None:
    """Pinned memories are always included: pages and segments of this space, the user's knowledge."""
    result.pinned_pages = list(Page.objects.filter(space=space, pinned=True).without_vectors().order_by("seq"))
    result.pinned_segments = list(Segment.objects.filter(space=space, pinned=True).without_vectors().order_by("id"))
    result.pinned_knowledge = list(
        KnowledgeEntry.objects.filter(end_user_id=space.end_user_id, pinned=True)
        .filter(Q(kind=KnowledgeKind.USER) | Q(assistant_id=space.assistant_id))
        .without_vectors()
        .order_by("id")
    )
