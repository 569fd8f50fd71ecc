"""What a retrieval found: the scored segments, pages and knowledge, the memory that needs no search, and which
found pages are no longer current."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.timeframes import TimeRange
from memory.validity import Replacement


@dataclass(frozen=True)
class ScoredSegment:
    segment: Segment
    score: float
    cosine: float
    keyword_overlap: float


@dataclass(frozen=True)
class ScoredPage:
    """A page with its relevance (cosine to the query; 0 without a vector) and how retrieval found it.

    `found_by` maps each channel that ranked the page to what it saw: "vector" (cosine), "words" (the query terms
    it holds), "date" (the range's label), "fact" (the knowledge entry's id), "neighbour" (the hit's page id); with
    "vector", "passage" when the best cosine was a passage's: where it starts in `Page.memory_text`.
    """

    page: Page
    score: float
    fused: float = 0.0
    found_by: dict = field(default_factory=dict)

    def explanation(self) -> str:
        """ "words 'biscuit', vector 0.71, date range May 2023": why this page was retrieved, for an operator."""
        parts = []
        if "words" in self.found_by:
            parts.append("words " + ", ".join(f"'{w}'" for w in self.found_by["words"]))
        if "vector" in self.found_by:
            passage = self.found_by.get("passage")
            at = f" (its passage at character {passage:,})" if passage is not None else ""
            parts.append(f"vector {self.found_by['vector']:.2f}{at}")
        if "date" in self.found_by:
            parts.append(f"date range {self.found_by['date']}")
        if "fact" in self.found_by:
            parts.append(f"fact #{self.found_by['fact']}")
        if "neighbour" in self.found_by:
            parts.append(f"next to page #{self.found_by['neighbour']}")
        return ", ".join(parts)


@dataclass(frozen=True)
class ScoredKnowledge:
    entry: KnowledgeEntry
    score: float


@dataclass
class RetrievalResult:
    """Exactly what retrieval found for one query, so a reply can be explained later.

    `pages` are the mid-term pages for the prompt, best first; `ranked` is the whole fused list, short-term pages
    included (they are in the prompt anyway), which is what an evaluation of the ranking reads.
    """

    query: str
    query_keywords: list[str]
    short_term: list[Page] = field(default_factory=list)
    segments: list[ScoredSegment] = field(default_factory=list)
    pages: list[ScoredPage] = field(default_factory=list)
    ranked: list[ScoredPage] = field(default_factory=list)
    time_range: TimeRange | None = None
    profile: ProfileVersion | None = None
    user_knowledge: list[ScoredKnowledge] = field(default_factory=list)
    assistant_knowledge: list[ScoredKnowledge] = field(default_factory=list)
    pinned_segments: list[Segment] = field(default_factory=list)
    pinned_pages: list[Page] = field(default_factory=list)
    pinned_knowledge: list[KnowledgeEntry] = field(default_factory=list)
    visited_segment_ids: list[int] = field(default_factory=list)
    # pages (by id) no longer current: a later turn or fact gave their slot another value, or a person marked them
    # outdated (memory.validity); quoted as earlier, each ranked after what replaced it
    earlier: dict[int, Replacement] = field(default_factory=dict)

    def relevant_segment_ids(self, page_ids: set[int] | None = None) -> list[int]:
        """The segments that supplied a page relevant to the query (cosine ≥ MEMORY_VISIT_RELEVANCE), among the
        pages `page_ids` (those that reached the prompt) or all retrieved pages; ascending."""
        floor = settings.MEMORY_VISIT_RELEVANCE
        return sorted(
            {
                p.page.segment_id
                for p in self.pages
                if p.score >= floor and p.page.segment_id is not None and (page_ids is None or p.page.id in page_ids)
            }
        )

    def used(self) -> dict:
        """The ids and scores of everything used, as JSON-ready data."""
        return {
            "short_term_page_ids": [p.id for p in self.short_term],
            "segments": [{"id": s.segment.id, "score": round(s.score, 4)} for s in self.segments],
            "pages": [
                {"id": p.page.id, "score": round(p.score, 4), "found_by": _rounded(p.found_by)} for p in self.pages
            ],
            "profile_version_id": self.profile.id if self.profile else None,
            "user_knowledge": [{"id": k.entry.id, "score": round(k.score, 4)} for k in self.user_knowledge],
            "assistant_knowledge": [{"id": k.entry.id, "score": round(k.score, 4)} for k in self.assistant_knowledge],
            "pinned_segment_ids": [s.id for s in self.pinned_segments],
            "pinned_page_ids": [p.id for p in self.pinned_pages],
            "pinned_knowledge_ids": [k.id for k in self.pinned_knowledge],
            "visited_segment_ids": list(self.visited_segment_ids),
        }


def _rounded(found_by: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in found_by.items()}
