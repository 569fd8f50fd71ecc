"""Retrieval from all three tiers for a query, and every other piece of vector SQL in the project.

Mid-term pages are found by several channels (page and passage vectors, full-text words, the time range a question
names, the pages behind matched facts, the neighbours of strong hits) and ranked by one score that each channel
raises in proportion to how strongly it matched (`fused_score`); MemoryOS's published pipeline (top m segments, then
their pages) stays as PAPER.

Vector search over one user's rows is an exact scan (MemoryOS bounds them: 200 segments, 100 + 100 knowledge
entries), so recall is exact and no approximate index is needed. Retrieval makes no LLM call and a bounded number
of queries whatever the size of memory (pinned in tests/memory/test_retrieval.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from memory.models import KnowledgeEntry, MemorySpace, Page, ProfileVersion, ReviewState, Segment
from memory.models.tiers import KnowledgeKind, Tier
from memory.retrieval.channels import (
    CANDIDATES,
    GATED_SQL,
    KNOWLEDGE_SQL,
    LOAD_SQL,
    NEIGHBOUR_HITS,
    PASSAGE_POOL,
    PINNED_KNOWLEDGE_SQL,
    PROFILE_SQL,
    RECENT_AND_PINNED_SQL,
    SEGMENTS_SHOWN_SQL,
    SEGMENTS_SQL,
    VECTOR_POOL,
    VECTOR_SQL,
    Candidate,
    SegmentScore,
    fact_candidates,
    fuse_neighbours,
    fused_score,
    lexical_candidates,
    lexical_params,
    lexical_sql,
    neighbour_seqs,
    query_terms,
    segment_scores,
    time_candidates,
    time_statement,
    vector_candidates,
)
from memory.retrieval.common_terms import common_terms
from memory.retrieval.config import DEFAULT, RetrievalConfig, retrieval_config
from memory.retrieval.result import RetrievalResult, ScoredKnowledge, ScoredPage, ScoredSegment
from memory.retrieval.rows import Batch, Statement, extra_float, instances, vector_text
from memory.services.embedding_state import embedder_for_store
from memory.services.visits import retrieval_visits_record
from memory.text import extract_keywords
from memory.timeframes import query_time_range
from memory.validity import Replacement, Said, claims_read_ahead, replacements


def retrieve(
    *,
    space: MemorySpace,
    query: str,
    record_visits: bool = True,
    now: datetime | None = None,
    config: RetrievalConfig | None = None,
) -> RetrievalResult:
    """STM + the best mid-term pages + profile + top user/assistant knowledge + pinned memories. No LLM call.

    Two round trips to the database whatever the size of memory: every read that needs only the question (short-term
    and pinned memory, the profile, segment scores, knowledge, each page channel), then the pages and segments the
    fused ranking chose. Side effect (unless `record_visits` is False, as in the operator's context preview and in
    chat, which records the visits of what reached its prompt): a visit is queued for each segment that supplied a
    page relevant to the query (cosine ≥ MEMORY_VISIT_RELEVANCE), one small INSERT; the worker counts it (N_visit
    += 1, last touch, heat sample). A question about something else heats nothing.
    """
    now = now or timezone.now()
    run = _searched(space, query, config or retrieval_config(), now)
    second = Batch()
    if query.strip():
        run.rank(second)
    run.read_segments(second)
    second.run()
    run.finish()
    if record_visits:
        retrieval_visits_record(result=run.result, now=now)
    return run.result


def channel_candidates(
    *, space: MemorySpace, query: str, now: datetime, config: RetrievalConfig | None = None
) -> tuple[list[Candidate], RetrievalResult]:
    """What each page channel found for `query` before fusion (cosine, share of the query's IDF mass, date), and
    the first batch's result; for evaluating fusion weights without a round trip per setting. Reads only."""
    run = _searched(space, query, config or DEFAULT, now)
    if run.config.knowledge_pages:
        fact_candidates(space, run.result, run.candidates)
    return list(run.candidates.values()), run.result


def _searched(space: MemorySpace, query: str, config: RetrievalConfig, now: datetime) -> _Retrieval:
    """A retrieval whose first batch has run: memory that needs no search, segment scores, knowledge, channels."""
    run = _Retrieval(space, query, config, now)
    first = Batch()
    run.read_memory(first)
    if query.strip():
        run.search(first)
    first.run(meanwhile=run.remember)  # while the page channels are still read beside
    run.remember_channels()
    return run


# --- One retrieval --------------------------------------------------------------------------------------------


class _Retrieval:
    """The statements of one retrieval and what their rows become."""

    def __init__(self, space: MemorySpace, query: str, config: RetrievalConfig, now: datetime) -> None:
        self.space, self.config, self.now = space, config, now
        self.result = RetrievalResult(query=query, query_keywords=extract_keywords(query))
        self.reads: dict[str, Statement] = {}
        self.vector = ""  # the question's embedding in pgvector's text form, once `search` has embedded it
        self.terms: list[str] = []  # the question's words for the full-text channel, once `search` has read them
        self.segments: list[SegmentScore] = []
        self.top: list[SegmentScore] = []
        self.candidates: dict[int, Candidate] = {}
        self.pool: list[Candidate] = []
        self.neighbour_seqs: dict[int, int] = {}

    def read_memory(self, batch: Batch) -> None:
        """Short-term and pinned pages, the profile prompts may use, pinned knowledge."""
        space, user = self.space, {"user": self.space.end_user_id, "approved": ReviewState.APPROVED}
        self.reads["recent"] = batch.add(RECENT_AND_PINNED_SQL, {"space": space.id, "short_term": Tier.SHORT_TERM})
        self.reads["profile"] = batch.add(PROFILE_SQL, user)
        params = user | {"assistant": space.assistant_id, "user_kind": KnowledgeKind.USER}
        self.reads["pinned_knowledge"] = batch.add(PINNED_KNOWLEDGE_SQL, params)

    def search(self, batch: Batch) -> None:
        """Segment scores, knowledge and (unless the paper's gate needs the top segments first) the page channels."""
        space, query = self.space, self.result.query
        self.vector = vector_text(embedder_for_store().embed([query])[0])
        self.reads["segments"] = batch.add(SEGMENTS_SQL, {"space": space.id, "vector": self.vector})
        self.reads["knowledge"] = batch.add(KNOWLEDGE_SQL, self._knowledge_params())
        if self.config.segment_gate:
            return
        params = {
            "space": space.id,
            "vector": self.vector,
            "pool": VECTOR_POOL,
            "passage_pool": PASSAGE_POOL,
            "limit": CANDIDATES,
        }
        self.reads["vector"] = batch.add(VECTOR_SQL, params, beside=True)
        self.terms = query_terms(query)
        if self.config.lexical and self.terms:
            lexical = lexical_sql(len(self.terms))
            params = lexical_params(space, self.terms, self.vector, common_terms())
            self.reads["words"] = batch.add(lexical, params, beside=True, prepared=True)
        if self.config.time:
            self.result.time_range = query_time_range(query, self.now)
            if self.result.time_range is not None:
                sql, params = time_statement(self.result.time_range)
                self.reads["date"] = batch.add(sql, params | {"space": space.id, "vector": self.vector})

    def _knowledge_params(self) -> dict:
        return {
            "vector": self.vector,
            "user": self.space.end_user_id,
            "assistant": self.space.assistant_id,
            "approved": ReviewState.APPROVED,
            "user_kind": KnowledgeKind.USER,
            "assistant_kind": KnowledgeKind.ASSISTANT,
            "limit": settings.MEMORY_RETRIEVE_KNOWLEDGE,
        }

    def remember(self) -> None:
        """What the first batch read on this thread's connection: memory that needs no search, segment scores,
        knowledge."""
        result, reads = self.result, self.reads
        for page in instances(Page, reads["recent"].rows):
            if page.tier == Tier.SHORT_TERM:
                result.short_term.append(page)
            if page.pinned:
                result.pinned_pages.append(page)
        profile = next(iter(instances(ProfileVersion, reads["profile"].rows)), None)
        # a profile derived from forgotten or corrected memory is withheld until the worker re-derives it
        result.profile = None if profile is None or profile.stale else profile
        result.pinned_knowledge = instances(KnowledgeEntry, reads["pinned_knowledge"].rows)
        if "segments" not in reads:
            return
        self.segments = segment_scores(reads["segments"].rows, result.query_keywords)
        self.top = self.segments[: settings.MEMORY_RETRIEVE_SEGMENTS]
        extra = ("score", "rank", "previous_text", "previous_until")
        for entry in instances(KnowledgeEntry, reads["knowledge"].rows, extra=extra):
            target = result.user_knowledge if entry.kind == KnowledgeKind.USER else result.assistant_knowledge
            target.append(ScoredKnowledge(entry=entry, score=extra_float(entry, "score")))
        # what _mark_earlier will compare, read while the page channels are still read beside (not after them)
        claims_read_ahead(s.text for s in _said([*result.short_term, *result.pinned_pages], result.user_knowledge))

    def remember_channels(self) -> None:
        """The page channels' lists, once every read of the first batch has its rows."""
        result, reads = self.result, self.reads
        if "vector" in reads:
            vector_candidates(reads["vector"].rows, self.segments, self.config, self.candidates)
        if "words" in reads:
            lexical_candidates(reads["words"].rows, self.terms, self.candidates)
        if "date" in reads:
            assert result.time_range is not None  # the date read is added only for a question that names a range
            time_candidates(reads["date"].rows, result.time_range, self.candidates)

    def rank(self, batch: Batch) -> None:
        """Fuse the channel lists (every page of the space competes) and load the best and their neighbours; or,
        with the paper's gate, load the top segments' pages by cosine."""
        if self.config.segment_gate:
            params = {
                "vector": self.vector,
                "segments": [s.id for s in self.top],
                "limit": settings.MEMORY_RETRIEVE_PAGES,
            }
            self.reads["gated"] = batch.add(GATED_SQL, params)
            return
        if self.config.knowledge_pages:
            fact_candidates(self.space, self.result, self.candidates)
        for candidate in self.candidates.values():
            candidate.fused = fused_score(candidate, self.config)
        best = sorted(self.candidates.values(), key=lambda c: (-c.fused, -c.cosine, c.id))
        self.neighbour_seqs = neighbour_seqs(best[:NEIGHBOUR_HITS]) if self.config.neighbours else {}
        self.pool = best[: settings.MEMORY_RETRIEVE_PAGES + 2 * NEIGHBOUR_HITS]
        self.reads["pages"] = batch.add(LOAD_SQL, self._loaded_params())

    def _loaded_params(self) -> dict:
        ids, seqs = [c.id for c in self.pool], list(self.neighbour_seqs)
        return {"space": self.space.id, "vector": self.vector, "ids": ids, "seqs": seqs}

    def read_segments(self, batch: Batch) -> None:
        """The top segments, those of the loaded pages and the pinned ones, without vectors."""
        params = self._loaded_params() | {"segments": [s.id for s in self.top]}
        self.reads["shown"] = batch.add(SEGMENTS_SHOWN_SQL, params)

    def finish(self) -> None:
        """The ranked pages from the second batch, and the segments attached to what the result shows."""
        result = self.result
        if "gated" in self.reads:
            gated = instances(Page, self.reads["gated"].rows, extra=("score",))
            result.pages = [
                ScoredPage(page=p, score=extra_float(p, "score"), found_by={"vector": extra_float(p, "score")})
                for p in gated
            ]
            result.ranked = list(result.pages)
        elif "pages" in self.reads:
            pages = {p.id: p for p in instances(Page, self.reads["pages"].rows, extra=("cosine",))}
            fuse_neighbours(pages, self.pool, self.neighbour_seqs, self.candidates, self.config)
            key = lambda c: (-c.fused, -c.cosine, c.id)  # noqa: E731
            ranked = sorted((c for c in self.candidates.values() if c.id in pages), key=key)
            limit = settings.MEMORY_RETRIEVE_PAGES
            result.ranked = [ScoredPage(pages[c.id], c.cosine, c.fused, c.found_by) for c in ranked[:limit]]
            result.pages = [p for p in result.ranked if p.page.tier == Tier.MID_TERM]
        # keyed by int | None: a ranked page not placed in a segment looks up None and finds none
        by_id: dict[int | None, Segment] = {s.id: s for s in instances(Segment, self.reads["shown"].rows)}
        result.segments = [ScoredSegment(by_id[s.id], s.score, s.cosine, s.overlap) for s in self.top if s.id in by_id]
        result.pinned_segments = [s for s in by_id.values() if s.pinned]
        for scored in result.ranked:
            scored.page.segment = by_id.get(scored.page.segment_id)
        _mark_earlier(result)


def _mark_earlier(result: RetrievalResult) -> None:
    """Which found pages are no longer current (`RetrievalResult.earlier`), and each ranked after the page that
    replaced it: of two turns that give one thing different values, the newer answers first."""
    pages = {p.id: p for p in [*result.short_term, *result.pinned_pages, *(s.page for s in result.ranked)]}
    for (kind, item_id), replacement in replacements(_said(pages.values(), result.user_knowledge)).items():
        if kind == "page":
            result.earlier[item_id] = replacement
    for page in pages.values():
        if page.valid_to is not None:  # a person marked it outdated
            result.earlier[page.id] = Replacement(None, page.valid_to, "", page.outdated_note)
    if result.earlier:
        result.ranked = newer_first(result.ranked, result.earlier)
        result.pages = [p for p in result.ranked if p.page.tier == Tier.MID_TERM]


def _said(pages: Iterable[Page], knowledge: Iterable[ScoredKnowledge]) -> list[Said]:
    """What `_mark_earlier` compares: each page's user message and each fact's text, with when it was said."""
    said = [Said(("page", p.id), p.user_message, p.at) for p in pages]
    said += [Said(("knowledge", k.entry.id), k.entry.text, k.entry.valid_from or k.entry.created_at) for k in knowledge]
    return said


def newer_first(ranked: list[ScoredPage], earlier: dict[int, Replacement]) -> list[ScoredPage]:
    """`ranked` with each page that replaced an earlier one moved just ahead of it when it ranked below it."""
    order = list(ranked)
    for scored in ranked:
        replacement = earlier.get(scored.page.id)
        if replacement is None or replacement.by is None or replacement.by[0] != "page":
            continue
        position = {s.page.id: i for i, s in enumerate(order)}
        later = position.get(replacement.by[1])
        if later is not None and later > position[scored.page.id]:
            order.insert(position[scored.page.id], order.pop(later))
    return order
