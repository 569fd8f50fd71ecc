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

import re
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection, models
from django.db.models import FloatField, Value
from django.db.models.functions import Coalesce
from django.db.models.sql import Query
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone
from pgvector.django import CosineDistance

from memory.heat import keyword_set, keyword_set_jaccard
from memory.models import KnowledgeEntry, MemorySpace, Page, ProfileVersion, ReviewState, Segment
from memory.models.tiers import KnowledgeKind, Tier, topic_vector_of, unread_fields
from memory.services.embedding_state import embedder_for_store
from memory.services.heat_samples import segment_visits_queue
from memory.sql import reads_beside_allowed, rows_beside, several_statements_per_execute
from memory.text import STOPWORDS, extract_keywords
from memory.timeframes import TimeRange, query_time_range
from memory.validity import Replacement, Said, replacements


def _similarity(vector: np.ndarray):
    """cosine similarity = 1 − cosine distance; rows without a vector score 0 (the ORM's twin of COSINE)."""
    return Coalesce(Value(1.0) - CosineDistance("embedding", vector), Value(0.0), output_field=FloatField())


def _vector_text(vector: np.ndarray) -> str:
    """The query vector as pgvector's text form, formatted once for the several statements of one retrieval: nine
    significant digits, which give every float32 back exactly, in two thirds of the characters of the shortest
    float64 form (the statements carry it five times, and PostgreSQL parses each)."""
    return "[" + ",".join([f"{x:.9g}" for x in np.asarray(vector, dtype=np.float32).tolist()]) + "]"


# The cosine similarity of a row's `embedding` to the query vector (parameter `vector`); rows without one score 0.
COSINE = "coalesce(1.0 - (embedding <=> %(vector)s::vector), 0.0)"
# The same for a page, whose vector is kept in half precision (`HalfVectorField`): the question's is cast to match.
PAGE_COSINE = "coalesce(1.0 - (embedding <=> %(vector)s::halfvec), 0.0)"


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


# The tenant's pages nearest a question, for the console's search across users: every space of the tenant is ranked
# by the Hamming distance of its pages' binary-quantised vectors (index-only scans of `page_space_bits`, one space
# after another: the cost grows with the tenant's pages, about 50 bytes a page), the best `pool` re-ranked by exact
# cosine.
TENANT_VECTOR_SQL = f"""
WITH near AS (
    SELECT id FROM memory_page
    WHERE space_id = ANY(ARRAY(SELECT id FROM memory_memoryspace WHERE tenant_id = %(tenant)s))
      AND embedding_bits IS NOT NULL
    ORDER BY embedding_bits <~> binary_quantize(%(vector)s::halfvec), id
    LIMIT %(pool)s
)
SELECT id, {PAGE_COSINE} AS cosine FROM memory_page WHERE id = ANY(ARRAY(SELECT id FROM near))
ORDER BY cosine DESC, id LIMIT %(limit)s
"""


def tenant_vector_pages(*, tenant_id: int, query: str, floor: float, limit: int = 50) -> dict[int, float]:
    """page id → cosine, for the tenant's pages (any user's) at least `floor` near `query`, nearest first: the
    console's search across users. One query, beside the question's embedding."""
    vector = _vector_text(embedder_for_store().embed([query])[0])
    params: dict[str, Any] = {"tenant": tenant_id, "vector": vector, "pool": VECTOR_POOL, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(TENANT_VECTOR_SQL, params)
        return {page_id: float(cosine) for page_id, cosine in cursor.fetchall() if cosine >= floor}


EXACT_NEAREST_SQL = """
SELECT id FROM memory_page
WHERE space_id = %(space)s AND embedding IS NOT NULL
ORDER BY embedding <=> %(vector)s::halfvec
LIMIT %(limit)s
"""


def space_exact_nearest_pages(*, space_id: int, query: str, limit: int = 10) -> list[int]:
    """The ids of the space's `limit` pages nearest to `query` by exact cosine over all of them: a flat vector search
    with no channel, fusion or first pass (pages have no approximate index), the least any vector memory does for a
    question; memory_bench times it as retrieval's baseline on the same rows."""
    vector = _vector_text(embedder_for_store().embed([query])[0])
    with connection.cursor() as cursor:
        cursor.execute(EXACT_NEAREST_SQL, {"space": space_id, "vector": vector, "limit": limit})
        return [page_id for (page_id,) in cursor.fetchall()]


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


# --- Retrieval for a query ------------------------------------------------------------------------------------

CANDIDATES = 100  # each channel's list before fusion: five times the longest list the evaluation reads (k = 20)
# The vector channel's first pass keeps this many pages by binary-quantised distance for the exact re-rank: the
# smallest multiple of CANDIDATES that keeps ≥ 99.9 % of the exact top 10 and ≥ 99.5 % of the top 20 over the
# pooled LoCoMo dev pages with MiniLM (see docs/decisions/0004-binary-first-pass.md); 4× is pgvector's usual advice.
VECTOR_POOL = 4 * CANDIDATES
NEIGHBOUR_HITS = 3  # the strongest fused hits whose previous and next turns may join as candidates
MAX_QUERY_TERMS = 12
TERM = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class RetrievalConfig:
    """Which stages rank a space's pages for a query, and how much each counts. DEFAULT is the product's; PAPER is
    MemoryOS as published.

    - segment_gate: only pages of the top m segments by F, ranked by cosine (the paper's two stages);
    - otherwise every page competes on one score (`fused_score`): its cosine to the query, plus
      `words_weight` × the share of the query's IDF mass its words hold (lexical: PostgreSQL full text), plus
      `date_weight` when it is dated in the range the question names (time), plus `segment_prior` × its
      segment's F, plus `fact_weight` × the cosine of a matched long-term fact it stated (knowledge_pages);
    - neighbours: a turn just before or after one of the strongest hits scores at least `neighbour_share` of
      that hit (never above it), when its own cosine is at least `neighbour_floor` (it is about the question too).
    The weights are chosen by cross-validation across every evaluation set and conversation (docs/decisions/
    0001-score-fusion.md): a channel counts in proportion to how strongly it matched, so a common word or a weak
    neighbour cannot push a good vector hit out of the list, as reciprocal rank fusion's equal votes did.
    """

    segment_gate: bool = False
    segment_prior: float = 0.0
    lexical: bool = True
    time: bool = True
    knowledge_pages: bool = False
    neighbours: bool = True
    # Chosen together by cross-validation over four kinds of conversation (docs/decisions/0001-score-fusion.md):
    # every leave-one-conversation-out fold outside the personal-facts set chose these four values.
    words_weight: float = 0.7
    date_weight: float = 0.3
    neighbour_share: float = 0.7
    neighbour_floor: float = 0.1
    fact_weight: float = 0.5  # knowledge_pages is off: it lowers recall (docs/decisions/0003-hybrid-retrieval.md)


DEFAULT = RetrievalConfig()
PAPER = RetrievalConfig(
    segment_gate=True, segment_prior=0.0, lexical=False, time=False, knowledge_pages=False, neighbours=False
)


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


def retrieval_config() -> RetrievalConfig:
    """The configured pipeline: MEMORY_RETRIEVAL is "hybrid" (the default) or "paper"."""
    return PAPER if settings.MEMORY_RETRIEVAL == "paper" else DEFAULT


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
    second = _Batch()
    if query.strip():
        run.rank(second)
    run.read_segments(second)
    second.run()
    run.finish()
    if record_visits:
        run.result.visited_segment_ids = segment_visits_queue(segment_ids=run.result.relevant_segment_ids(), now=now)
    return run.result


def channel_candidates(
    *, space: MemorySpace, query: str, now: datetime, config: RetrievalConfig | None = None
) -> tuple[list[_Candidate], RetrievalResult]:
    """What each page channel found for `query` before fusion (cosine, share of the query's IDF mass, date), and
    the first batch's result; for evaluating fusion weights without a round trip per setting. Reads only."""
    run = _searched(space, query, config or DEFAULT, now)
    if run.config.knowledge_pages:
        _fact_candidates(space, run.result, run.candidates)
    return list(run.candidates.values()), run.result


def _searched(space: MemorySpace, query: str, config: RetrievalConfig, now: datetime) -> _Retrieval:
    """A retrieval whose first batch has run: memory that needs no search, segment scores, knowledge, channels."""
    run = _Retrieval(space, query, config, now)
    first = _Batch()
    run.read_memory(first)
    if query.strip():
        run.search(first)
    first.run()
    run.remember()
    return run


# --- Statements sent together -----------------------------------------------------------------------------------


@dataclass
class _Statement:
    """One statement of a batch; its rows once the batch has run."""

    sql: str
    params: dict
    beside: bool = False  # may run on a side reader's connection, beside the batch (`memory.sql.rows_beside`)
    rows: list[tuple] = field(default_factory=list)


class _Batch:
    """Statements that do not depend on each other, sent to PostgreSQL in one round trip (one execute, results read
    in turn). Each statement's parameters are renamed apart (the third statement's `%(space)s` is sent as
    `%(s2_space)s`), so statements need not agree on names. One execute may carry several statements because
    Django binds parameters on the client with psycopg 3, its default; a database configured with the
    `server_side_binding` option refuses that, and gets the statements one execute each.

    A statement added `beside` runs on a side reader's connection at the same time, on another server backend,
    when reads may run beside this thread's (`memory.sql.reads_beside_allowed`: not inside a transaction); if that
    read fails it runs again here, where a real failure is raised as usual."""

    def __init__(self) -> None:
        self.statements: list[_Statement] = []

    def add(self, sql: str, params: dict, *, beside: bool = False) -> _Statement:
        statement = _Statement(sql, params, beside)
        self.statements.append(statement)
        return statement

    def run(self) -> None:
        parallel = reads_beside_allowed()
        futures = [(s, _rows_beside(s)) for s in self.statements if s.beside and parallel]
        self._run_here([s for s in self.statements if not (s.beside and parallel)])
        for statement, future in futures:
            try:
                statement.rows = future.result()
            except Exception:  # a lost side connection, or no side reader to be had: read it here
                self._run_here([statement])

    @staticmethod
    def _run_here(statements: list[_Statement]) -> None:
        if not statements:
            return
        if not several_statements_per_execute():
            _Batch._run_one_by_one(statements)
            return
        sql = ";\n".join(_renamed(s.sql, i) for i, s in enumerate(statements))
        params = {f"s{i}_{name}": value for i, s in enumerate(statements) for name, value in s.params.items()}
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for statement in statements:
                statement.rows = cursor.fetchall()
                cursor.nextset()

    @staticmethod
    def _run_one_by_one(statements: list[_Statement]) -> None:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement.sql, statement.params)
                statement.rows = cursor.fetchall()


def _rows_beside(statement: _Statement) -> Future:
    """The statement's rows from a side reader, or the error that kept one from reading them."""
    try:
        return rows_beside(statement.sql, statement.params)
    except RuntimeError as exc:  # no new threads while the interpreter shuts down
        failed: Future = Future()
        failed.set_exception(exc)
        return failed


PARAMETER = re.compile(r"%\((\w+)\)s")


@cache
def _renamed(sql: str, index: int) -> str:
    return PARAMETER.sub(rf"%(s{index}_\1)s", sql)


@cache
def _columns(model: type[models.Model]) -> str:
    """The model's columns a read loads (as `without_vectors()` does), for retrieval's written-out statements."""
    return ", ".join(f.column for f in _read_fields(model))


@cache
def _read_fields(model: type[models.Model]) -> tuple[models.Field, ...]:
    skipped = unread_fields(model)
    return tuple(f for f in model._meta.concrete_fields if f.name not in skipped)


def _instances(model: type[models.Model], rows: list[tuple], extra: tuple[str, ...] = ()) -> list:
    """Model instances from rows of `_columns(model)` followed by the `extra` columns (set as attributes), with the
    fields' own conversions from the database applied, as `Manager.raw` would."""
    names, compiler, converters = _reading(model)
    if converters:
        rows = compiler.apply_converters(rows, converters)
    instances, loaded = [], _loaded_names(model)
    for row in rows:
        instance = model.from_db(connection.alias, loaded, row[: len(names)])
        for name, value in zip(extra, row[len(names) :], strict=True):
            setattr(instance, name, value)
        instances.append(instance)
    return instances


@cache
def _loaded_names(model: type[models.Model]) -> frozenset[str]:
    """`_columns(model)`'s attribute names as a set: `Model.from_db` asks of every field whether it was loaded."""
    return frozenset(_reading(model)[0])


@cache
def _reading(model: type[models.Model]) -> tuple[list[str], SQLCompiler, dict]:
    """The attribute names of `_columns(model)` and the conversions their values need, worked out once."""
    fields = _read_fields(model)
    compiler = connection.ops.compiler("SQLCompiler")(Query(model), connection, connection.alias)
    converters = compiler.get_converters([f.get_col(model._meta.db_table) for f in fields])
    return [f.attname for f in fields], compiler, converters


# --- One retrieval --------------------------------------------------------------------------------------------


class _Retrieval:
    """The statements of one retrieval and what their rows become."""

    def __init__(self, space: MemorySpace, query: str, config: RetrievalConfig, now: datetime) -> None:
        self.space, self.config, self.now = space, config, now
        self.result = RetrievalResult(query=query, query_keywords=extract_keywords(query))
        self.reads: dict[str, _Statement] = {}
        self.vector = ""  # the question's embedding in pgvector's text form, once `search` has embedded it
        self.terms: list[str] = []  # the question's words for the full-text channel, once `search` has read them
        self.segments: list[_SegmentScore] = []
        self.top: list[_SegmentScore] = []
        self.candidates: dict[int, _Candidate] = {}
        self.pool: list[_Candidate] = []
        self.neighbour_seqs: dict[int, int] = {}

    def read_memory(self, batch: _Batch) -> None:
        """Short-term and pinned pages, the profile prompts may use, pinned knowledge."""
        space, user = self.space, {"user": self.space.end_user_id, "approved": ReviewState.APPROVED}
        self.reads["recent"] = batch.add(RECENT_AND_PINNED_SQL, {"space": space.id, "short_term": Tier.SHORT_TERM})
        self.reads["profile"] = batch.add(PROFILE_SQL, user)
        params = user | {"assistant": space.assistant_id, "user_kind": KnowledgeKind.USER}
        self.reads["pinned_knowledge"] = batch.add(PINNED_KNOWLEDGE_SQL, params)

    def search(self, batch: _Batch) -> None:
        """Segment scores, knowledge and (unless the paper's gate needs the top segments first) the page channels."""
        space, query = self.space, self.result.query
        self.vector = _vector_text(embedder_for_store().embed([query])[0])
        self.reads["segments"] = batch.add(SEGMENTS_SQL, {"space": space.id, "vector": self.vector})
        self.reads["knowledge"] = batch.add(KNOWLEDGE_SQL, self._knowledge_params())
        if self.config.segment_gate:
            return
        params = {"space": space.id, "vector": self.vector, "pool": VECTOR_POOL, "limit": CANDIDATES}
        self.reads["vector"] = batch.add(VECTOR_SQL, params, beside=True)
        self.terms = query_terms(query)
        if self.config.lexical and self.terms:
            lexical = _lexical_sql(len(self.terms))
            self.reads["words"] = batch.add(lexical, _lexical_params(space, self.terms, self.vector), beside=True)
        if self.config.time:
            self.result.time_range = query_time_range(query, self.now)
            if self.result.time_range is not None:
                sql, params = _time_statement(self.result.time_range)
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
        """What the first batch read: memory that needs no search, segment scores, knowledge, channel lists."""
        result, reads = self.result, self.reads
        for page in _instances(Page, reads["recent"].rows):
            if page.tier == Tier.SHORT_TERM:
                result.short_term.append(page)
            if page.pinned:
                result.pinned_pages.append(page)
        profile = next(iter(_instances(ProfileVersion, reads["profile"].rows)), None)
        # a profile derived from forgotten or corrected memory is withheld until the worker re-derives it
        result.profile = None if profile is None or profile.stale else profile
        result.pinned_knowledge = _instances(KnowledgeEntry, reads["pinned_knowledge"].rows)
        if "segments" not in reads:
            return
        self.segments = _segment_scores(reads["segments"].rows, result.query_keywords)
        self.top = self.segments[: settings.MEMORY_RETRIEVE_SEGMENTS]
        extra = ("score", "rank", "previous_text", "previous_until")
        for entry in _instances(KnowledgeEntry, reads["knowledge"].rows, extra=extra):
            target = result.user_knowledge if entry.kind == KnowledgeKind.USER else result.assistant_knowledge
            target.append(ScoredKnowledge(entry=entry, score=float(entry.score)))
        if "vector" in reads:
            _vector_candidates(reads["vector"].rows, self.segments, self.config, self.candidates)
        if "words" in reads:
            _lexical_candidates(reads["words"].rows, self.terms, self.candidates)
        if "date" in reads:
            _time_candidates(reads["date"].rows, result.time_range, self.candidates)

    def rank(self, batch: _Batch) -> None:
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
            _fact_candidates(self.space, self.result, self.candidates)
        for candidate in self.candidates.values():
            candidate.fused = fused_score(candidate, self.config)
        best = sorted(self.candidates.values(), key=lambda c: (-c.fused, -c.cosine, c.id))
        self.neighbour_seqs = _neighbour_seqs(best[:NEIGHBOUR_HITS]) if self.config.neighbours else {}
        self.pool = best[: settings.MEMORY_RETRIEVE_PAGES + 2 * NEIGHBOUR_HITS]
        self.reads["pages"] = batch.add(LOAD_SQL, self._loaded_params())

    def _loaded_params(self) -> dict:
        ids, seqs = [c.id for c in self.pool], list(self.neighbour_seqs)
        return {"space": self.space.id, "vector": self.vector, "ids": ids, "seqs": seqs}

    def read_segments(self, batch: _Batch) -> None:
        """The top segments, those of the loaded pages and the pinned ones, without vectors."""
        params = self._loaded_params() | {"segments": [s.id for s in self.top]}
        self.reads["shown"] = batch.add(SEGMENTS_SHOWN_SQL, params)

    def finish(self) -> None:
        """The ranked pages from the second batch, and the segments attached to what the result shows."""
        result = self.result
        if "gated" in self.reads:
            pages = _instances(Page, self.reads["gated"].rows, extra=("score",))
            result.pages = [
                ScoredPage(page=p, score=float(p.score), found_by={"vector": float(p.score)}) for p in pages
            ]
            result.ranked = list(result.pages)
        elif "pages" in self.reads:
            pages = {p.id: p for p in _instances(Page, self.reads["pages"].rows, extra=("cosine",))}
            _fuse_neighbours(pages, self.pool, self.neighbour_seqs, self.candidates, self.config)
            key = lambda c: (-c.fused, -c.cosine, c.id)  # noqa: E731
            ranked = sorted((c for c in self.candidates.values() if c.id in pages), key=key)
            limit = settings.MEMORY_RETRIEVE_PAGES
            result.ranked = [ScoredPage(pages[c.id], c.cosine, c.fused, c.found_by) for c in ranked[:limit]]
            result.pages = [p for p in result.ranked if p.page.tier == Tier.MID_TERM]
        by_id = {segment.id: segment for segment in _instances(Segment, self.reads["shown"].rows)}
        result.segments = [ScoredSegment(by_id[s.id], s.score, s.cosine, s.overlap) for s in self.top if s.id in by_id]
        result.pinned_segments = [s for s in by_id.values() if s.pinned]
        for scored in result.ranked:
            scored.page.segment = by_id.get(scored.page.segment_id)
        _mark_earlier(result)


def _mark_earlier(result: RetrievalResult) -> None:
    """Which found pages are no longer current (`RetrievalResult.earlier`), and each ranked after the page that
    replaced it: of two turns that give one thing different values, the newer answers first."""
    pages = {p.id: p for p in [*result.short_term, *result.pinned_pages, *(s.page for s in result.ranked)]}
    said = [Said(("page", p.id), p.user_message, p.at) for p in pages.values()]
    said += [Said(("knowledge", k.entry.id), k.entry.text, k.entry.valid_from or k.entry.created_at)
             for k in result.user_knowledge]  # fmt: skip
    for (kind, item_id), replacement in replacements(said).items():
        if kind == "page":
            result.earlier[item_id] = replacement
    for page in pages.values():
        if page.valid_to is not None:  # a person marked it outdated
            result.earlier[page.id] = Replacement(None, page.valid_to, "", page.outdated_note)
    if result.earlier:
        result.ranked = newer_first(result.ranked, result.earlier)
        result.pages = [p for p in result.ranked if p.page.tier == Tier.MID_TERM]


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


# --- Memory that needs no search ------------------------------------------------------------------------------

# A turn that stated a fact a reviewer rejected is withheld from every prompt unless pinned (kept on purpose):
# every statement that reads pages for a prompt keeps only these (memory.models.tiers.Page.withheld).
QUOTABLE = "(NOT withheld OR pinned)"

RECENT_AND_PINNED_SQL = f"""
SELECT {_columns(Page)} FROM memory_page
WHERE space_id = %(space)s AND ((tier = %(short_term)s AND NOT withheld) OR pinned) ORDER BY seq
"""

# The newest profile version a reviewer has approved (or that needed no review): the one prompts may use. Versions
# awaiting review or rejected never reach a prompt; the one before them stays in use meanwhile.
PROFILE_SQL = f"""
SELECT {_columns(ProfileVersion)} FROM memory_profileversion
WHERE end_user_id = %(user)s AND review_state = %(approved)s ORDER BY number DESC LIMIT 1
"""

# Pinned knowledge is always included: the user's, and this assistant's about itself (approved only).
PINNED_KNOWLEDGE_SQL = f"""
SELECT {_columns(KnowledgeEntry)} FROM memory_knowledgeentry
WHERE end_user_id = %(user)s AND pinned AND review_state = %(approved)s AND valid_to IS NULL
  AND (kind = %(user_kind)s OR assistant_id = %(assistant)s)
ORDER BY id
"""


# --- Segments ---------------------------------------------------------------------------------------------------

# Reads three columns per segment (at most MTM capacity rows); the few segments a result shows are read afterwards.
SEGMENTS_SQL = f"""
SELECT id, {COSINE}, keywords
FROM memory_segment WHERE space_id = %(space)s
"""


class _SegmentScore(NamedTuple):  # made for every segment of the space on every retrieval: a tuple is cheapest
    id: int
    score: float
    cosine: float
    overlap: float


def _segment_scores(rows: list[tuple], query_keywords: list[str]) -> list[_SegmentScore]:
    """F(query) for every segment of the space, best first, ties by id."""
    scored, query = [], keyword_set(query_keywords)
    for segment_id, cosine, keywords in rows:
        overlap = keyword_set_jaccard(query, keyword_set(keywords))
        scored.append(_SegmentScore(segment_id, cosine + overlap, cosine, overlap))  # F = cosine + Jaccard
    return sorted(scored, key=lambda s: (-s.score, s.id))


# The pages LOAD_SQL reads (by id, and the neighbours by seq), named again here for the segments they belong to.
LOADED = "space_id = %(space)s AND (id = ANY(%(ids)s) OR seq = ANY(%(seqs)s))"

# The top segments (`segments`), the pinned ones and those of the loaded pages: each part answered by its own
# index (the primary key; `segment_space_pinned`), not by walking the space's every segment to test the three.
SEGMENTS_SHOWN_SQL = f"""
SELECT {_columns(Segment)} FROM memory_segment
WHERE (space_id = %(space)s AND pinned)
   OR (space_id = %(space)s
       AND id = ANY(%(segments)s::bigint[] || ARRAY(SELECT segment_id FROM memory_page WHERE {LOADED})))
ORDER BY id
"""


# --- Knowledge --------------------------------------------------------------------------------------------------

# The best MEMORY_RETRIEVE_KNOWLEDGE approved, current facts about the user and about this assistant (a fact replaced
# by a later one, or marked outdated, is history: memory.services.supersession), each with the text and end of the
# fact it replaced, if any, so the prompt can say what was true before.
KNOWLEDGE_SQL = f"""
SELECT ranked.*, previous.text AS previous_text, previous.valid_to AS previous_until FROM (
    SELECT {_columns(KnowledgeEntry)}, score,
           row_number() OVER (PARTITION BY kind ORDER BY score DESC, id DESC) AS rank
    FROM (
        SELECT *, {COSINE} AS score
        FROM memory_knowledgeentry
        WHERE end_user_id = %(user)s AND review_state = %(approved)s AND valid_to IS NULL
          AND (kind = %(user_kind)s OR (kind = %(assistant_kind)s AND assistant_id = %(assistant)s))
    ) scored
) ranked
LEFT JOIN LATERAL (
    SELECT text, valid_to FROM memory_knowledgeentry
    WHERE superseded_by_id = ranked.id AND review_state = %(approved)s
    ORDER BY valid_to DESC, id DESC LIMIT 1
) previous ON true
WHERE rank <= %(limit)s ORDER BY kind, rank
"""


# --- Pages ------------------------------------------------------------------------------------------------------

# The paper: the top m segments' pages by cosine.
GATED_SQL = f"""
SELECT {_columns(Page)}, {PAGE_COSINE} AS score
FROM memory_page WHERE segment_id = ANY(%(segments)s) AND {QUOTABLE}
ORDER BY score DESC, seq DESC LIMIT %(limit)s
"""


@dataclass
class _Candidate:
    """A page some channel found, before it is loaded: what each channel saw of it, and the score they make."""

    id: int
    seq: int
    cosine: float = 0.0
    words: float = 0.0  # the share of the query's IDF mass its words hold
    dated: bool = False  # dated in the range the question names
    prior: float = 0.0  # its segment's F (the segment prior's evidence)
    fact: float = 0.0  # the cosine of the best matched long-term fact it stated
    fused: float = 0.0
    found_by: dict = field(default_factory=dict)


def fused_score(candidate: _Candidate, config: RetrievalConfig) -> float:
    """One page's score: its cosine, raised by each other channel in proportion to how strongly it matched."""
    return (
        candidate.cosine
        + config.words_weight * candidate.words
        + config.date_weight * candidate.dated
        + config.segment_prior * candidate.prior
        + config.fact_weight * candidate.fact
    )


# The nearest pages by cosine, in two passes: the space's pages ranked by the Hamming distance of their
# binary-quantised embeddings (an index-only scan of `page_space_bits`, ~75 buffers for 6,000 pages), then the best
# VECTOR_POOL of those by exact cosine, found by (space, id) in the leaves of that index the first pass has just read
# (the primary key would be descended once per page). A space of at most VECTOR_POOL pages is ranked exactly.
# A long page is also ranked by its best passage (max-passage scoring, Dai & Callan 2019; memory.models.passages):
# the space's passages go through the same two passes (`passage_space_bits`), the best `limit` pages by passage join
# the candidates, and each page scores the better of its own cosine and its best passage's; `passage` is that
# passage's start when it beat the page's own vector.
VECTOR_SQL = """
WITH near AS (
    SELECT id FROM memory_page
    WHERE space_id = %(space)s AND embedding_bits IS NOT NULL
    ORDER BY embedding_bits <~> binary_quantize(%(vector)s::halfvec), id
    LIMIT %(pool)s
), near_passages AS (
    SELECT id FROM memory_pagepassage
    WHERE space_id = %(space)s
    ORDER BY embedding_bits <~> binary_quantize(%(vector)s::halfvec), id
    LIMIT %(pool)s
), passages AS (
    SELECT DISTINCT ON (page_id) page_id, start, 1.0 - distance AS cosine FROM (
        SELECT page_id, start, embedding <=> %(vector)s::halfvec AS distance FROM memory_pagepassage
        WHERE space_id = %(space)s AND id = ANY(ARRAY(SELECT id FROM near_passages))
    ) scored
    ORDER BY page_id, distance, start
), passage AS (
    SELECT page_id, start, cosine FROM passages ORDER BY cosine DESC, page_id LIMIT %(limit)s
)
SELECT id, seq, segment_id, greatest(own, coalesce(passage.cosine, 0.0)) AS cosine,
       CASE WHEN passage.cosine > coalesce(own, 0.0) THEN passage.start END AS passage
FROM (
    SELECT id, seq, segment_id, 1.0 - (embedding <=> %(vector)s::halfvec) AS own
    FROM memory_page
    WHERE space_id = %(space)s AND id = ANY(ARRAY(SELECT id FROM near UNION SELECT page_id FROM passage))
      AND (NOT withheld OR pinned)
) page LEFT JOIN passage ON passage.page_id = page.id
ORDER BY cosine DESC, id
LIMIT %(limit)s
"""


def _vector_candidates(
    rows: list[tuple], segments: list[_SegmentScore], config: RetrievalConfig, candidates: dict[int, _Candidate]
) -> None:
    """The vector channel's pages with their cosine (a long page's may be its best passage's, whose start is then
    `found_by["passage"]`) and (for the segment prior) their segment's F."""
    f_of = {s.id: s.score for s in segments} if config.segment_prior else {}
    for page_id, seq, segment_id, cosine, passage in rows:
        candidate = candidates.setdefault(page_id, _Candidate(page_id, seq))
        candidate.cosine = float(cosine)
        candidate.prior = f_of.get(segment_id, 0.0)
        candidate.found_by["vector"] = float(cosine)
        if passage is not None:
            candidate.found_by["passage"] = passage


def query_terms(query: str) -> list[str]:
    """The question's content words for full-text search: lowercase, no stopwords, each once, in order."""
    terms: list[str] = []
    for word in TERM.findall(query.lower()):
        if len(word) > 1 and word not in STOPWORDS and word not in terms:
            terms.append(word)
    return terms[:MAX_QUERY_TERMS]


LEXICAL_SQL = """
WITH terms AS MATERIALIZED (
    SELECT {terms}, {either} AS either, memory_search_keys(%(space)s, {documents}) AS keys FROM (SELECT {parsed}) parsed
), hits AS MATERIALIZED (
    SELECT id, ctid AS address, {matches}
    FROM {page}, terms
    WHERE search_keys && terms.keys
), idf AS (
    SELECT {idf}, {mass} AS mass FROM (
        SELECT (SELECT next_seq - 1 FROM {space} WHERE id = %(space)s)::float8 AS n, {frequencies} FROM hits
    ) totals
), weighted AS MATERIALIZED (
    SELECT id, address, {flags}, {weight} AS weight FROM hits, idf WHERE {held_any}
), cut AS (
    SELECT min(weight) AS weight FROM (SELECT weight FROM weighted ORDER BY weight DESC LIMIT %(limit)s) best
)
SELECT page.id, page.seq, {held}, weighted.weight, ts_rank_cd(page.search, terms.either) AS rank, idf.mass,
       coalesce(1.0 - (page.embedding <=> %(vector)s::halfvec), 0.0) AS cosine
FROM weighted JOIN {page} page ON page.ctid = weighted.address, cut, terms, idf
WHERE weighted.weight >= cut.weight AND (NOT page.withheld OR page.pinned)
ORDER BY weighted.weight DESC, rank DESC, page.id
LIMIT %(limit)s
"""


@cache
def _lexical_sql(n_terms: int) -> str:
    """The full-text channel for `n_terms` terms (named %(t0)s…): matching pages with the terms they hold, best
    first by the summed IDF of those terms, ln(1 + (N − df + ½) / (df + ½)) as in BM25 (computed once per term, in
    float8), then by ts_rank_cd. N is the number of pages the space has stored (its page sequence), read from one
    row: the pages it holds unless some were deleted since, which it still counts, as Lucene counts deleted
    documents until they are merged away; counting the space's 6,000 index entries instead cost 0.5 ms a question.

    Each term's tsquery is parsed once (`terms`), not once per row. Pages are found by their space-scoped keys
    (`Page.search_keys`: the GIN index reads this space's list of each word, however many spaces share the table,
    and no other condition on the space filters the scan, which could tempt the planner into walking the space's
    every row); a key's hash may collide, with another word or another space's, so which terms a page holds is
    tested on `search` itself and on the page's own space, and a page that holds none is dropped. The matches
    carry only their id and those flags; ts_rank_cd, the costly part, is computed only for the pages whose IDF
    weight can still reach the list (`cut`), read again by their row's address (`ctid`, one buffer each where a
    lookup by id reads four; stable within the statement, whose snapshot keeps the row versions it saw)."""
    return LEXICAL_SQL.format(
        page=Page._meta.db_table,
        space=MemorySpace._meta.db_table,
        parsed=", ".join(f"plainto_tsquery('english', %(t{i})s) AS q{i}" for i in range(n_terms)),
        terms=", ".join(f"q{i}" for i in range(n_terms)),
        either="(" + " || ".join(f"q{i}" for i in range(n_terms)) + ")",
        documents=" || ".join(f"to_tsvector('english', %(t{i})s)" for i in range(n_terms)),
        matches=", ".join(f"(space_id = %(space)s AND search @@ terms.q{i})::int AS m{i}" for i in range(n_terms)),
        frequencies=", ".join(f"sum(m{i})::float8 AS d{i}" for i in range(n_terms)),
        idf=", ".join(f"ln(1.0 + (n - d{i} + 0.5) / (d{i} + 0.5)) AS w{i}" for i in range(n_terms)),
        mass=" + ".join(f"ln(1.0 + (n - d{i} + 0.5) / (d{i} + 0.5))" for i in range(n_terms)),
        flags=", ".join(f"m{i}" for i in range(n_terms)),
        held=", ".join(f"weighted.m{i}" for i in range(n_terms)),
        held_any=" + ".join(f"m{i}" for i in range(n_terms)) + " > 0",
        weight=" + ".join(f"m{i} * w{i}" for i in range(n_terms)),
    )


def _lexical_params(space: MemorySpace, terms: list[str], vector: str) -> dict:
    return {
        "space": space.id,
        "vector": vector,
        "limit": CANDIDATES,
        **{f"t{i}": term for i, term in enumerate(terms)},
    }


def _lexical_candidates(rows: list[tuple], terms: list[str], candidates: dict[int, _Candidate]) -> None:
    """Pages holding any of the query's terms (at most CANDIDATES, the best by the summed IDF of the terms they
    hold), each with the share of the query's IDF mass it holds: a page holding the rare words and names of the
    question scores near 1, one holding only a common word near 0. Document frequencies are counted in the
    database; the page's cosine comes with it, so a page only this channel found still has its vector's say."""
    for page_id, seq, *flags, weight, _rank, mass, cosine in rows:
        words = [term for term, hit in zip(terms, flags, strict=True) if hit]
        candidate = candidates.setdefault(page_id, _Candidate(page_id, seq))
        candidate.words = float(weight) / float(mass) if mass else 0.0
        candidate.cosine = max(candidate.cosine, float(cosine))  # the vector channel's may be a passage's
        candidate.found_by["words"] = words


def _time_statement(time_range: TimeRange) -> tuple[str, dict]:
    """Pages dated in the question's range, nearest by cosine first."""
    if time_range.month is not None:
        dated = "extract(month FROM at AT TIME ZONE %(zone)s) = %(month)s"
        params = {"month": time_range.month, "zone": timezone.get_current_timezone_name()}
    else:
        dated, params = "at >= %(start)s AND at < %(end)s", {"start": time_range.start, "end": time_range.end}
    sql = f"""
        SELECT id, seq, {PAGE_COSINE} AS cosine
        FROM memory_page WHERE space_id = %(space)s AND {dated} AND {QUOTABLE}
        ORDER BY cosine DESC, id LIMIT {CANDIDATES}
    """
    return sql, params


def _time_candidates(rows: list[tuple], time_range: TimeRange, candidates: dict[int, _Candidate]) -> None:
    for page_id, seq, cosine in rows:
        candidate = candidates.setdefault(page_id, _Candidate(page_id, seq))
        candidate.cosine = max(candidate.cosine, float(cosine))
        candidate.dated = True
        candidate.found_by["date"] = time_range.label


def _fact_candidates(space: MemorySpace, result: RetrievalResult, candidates: dict[int, _Candidate]) -> None:
    """The pages of this space behind the retrieved facts, each with the cosine of the best fact it stated (a page
    not otherwise found keeps cosine 0 until loaded: its fact is its evidence)."""
    facts = sorted([*result.user_knowledge, *result.assistant_knowledge], key=lambda k: (-k.score, k.entry.id))
    if not facts:
        return
    through = KnowledgeEntry.source_pages.through
    quotable = models.Q(page__withheld=False) | models.Q(page__pinned=True)
    rows = through.objects.filter(quotable, knowledgeentry_id__in=[k.entry.id for k in facts], page__space=space)
    rows = rows.values_list("knowledgeentry_id", "page_id", "page__seq")
    seq_of = {page_id: seq for _, page_id, seq in rows}
    best: dict[int, tuple[float, int]] = {}
    score_of = {k.entry.id: k.score for k in facts}
    for entry_id, page_id, _ in rows:
        if score_of[entry_id] > best.get(page_id, (-1.0, 0))[0]:
            best[page_id] = (score_of[entry_id], entry_id)
    for page_id, (score, entry_id) in best.items():
        candidate = candidates.setdefault(page_id, _Candidate(page_id, seq_of[page_id]))
        candidate.fact = max(float(score), 0.0)
        candidate.found_by.setdefault("fact", entry_id)


def _neighbour_seqs(hits: list[_Candidate]) -> dict[int, int]:
    """seq → the hit it neighbours, for the turns just before and after each hit (not themselves hits), the
    strongest hit first."""
    hit_seqs = {hit.seq for hit in hits}
    seqs: dict[int, int] = {}
    for hit in hits:
        for seq in (hit.seq - 1, hit.seq + 1):
            if seq not in hit_seqs:
                seqs.setdefault(seq, hit.id)
    return seqs


# The pooled candidates and the hits' neighbours, each with its cosine.
LOAD_SQL = f"SELECT {_columns(Page)}, {PAGE_COSINE} AS cosine FROM memory_page WHERE ({LOADED}) AND {QUOTABLE}"


def _fuse_neighbours(
    pages: dict[int, Page],
    pool: list[_Candidate],
    neighbour_seqs: dict[int, int],
    candidates: dict[int, _Candidate],
    config: RetrievalConfig,
) -> None:
    """A loaded neighbour that is about the question too (cosine ≥ neighbour_floor) scores at least
    `neighbour_share` of its hit's score and never above the hit (its evidence is the hit's); a neighbour below the
    floor is dropped, like every loaded page outside the pool. Every loaded page gets its exact cosine."""
    by_seq = {p.seq: p for p in pages.values()}
    for seq, hit_id in neighbour_seqs.items():
        page = by_seq.get(seq)
        if page is None or float(page.cosine) < config.neighbour_floor:
            continue
        candidate = candidates.setdefault(page.id, _Candidate(page.id, seq))
        candidate.cosine = max(candidate.cosine, float(page.cosine))
        hit = candidates[hit_id].fused
        own = fused_score(candidate, config)
        candidate.fused = max(own, min(config.neighbour_share * hit, hit - 1e-9))
        candidate.found_by.setdefault("neighbour", hit_id)
    pooled = {c.id for c in pool}
    for page_id in [i for i in pages if i not in pooled and "neighbour" not in candidates.get(i, _NONE).found_by]:
        del pages[page_id]
    for page in pages.values():
        candidate = candidates[page.id]
        if not candidate.cosine and "neighbour" not in candidate.found_by:  # found by a fact alone: now scored whole
            candidate.cosine = float(page.cosine)
            candidate.fused = fused_score(candidate, config)
        candidate.cosine = max(candidate.cosine, float(page.cosine))  # a passage's may be higher than the page's


_NONE = _Candidate(0, 0)
