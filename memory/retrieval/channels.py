"""Retrieval's statements and what their rows become: memory that needs no search, segment scores, knowledge, and
the page channels (page and passage vectors, full-text words, the question's time range, the pages behind matched facts,
the neighbours of strong hits) fused into one score (`fused_score`; docs/decisions/0001-score-fusion.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import NamedTuple

from django.db import models
from django.utils import timezone

from memory.heat import keyword_set, keyword_set_jaccard
from memory.models import KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.retrieval.common_terms import CommonTerms
from memory.retrieval.config import RetrievalConfig
from memory.retrieval.result import RetrievalResult
from memory.retrieval.rows import COSINE, PAGE_COSINE, columns, extra_float
from memory.text import STOPWORDS
from memory.timeframes import TimeRange

CANDIDATES = 100  # each channel's list before fusion: five times the longest list the evaluation reads (k = 20)
# The vector channel's first pass keeps this many pages by the Hamming distance of their two-bit codes for the exact
# re-rank: the fewest of 200, 250 and 300 that keep, with MiniLM over the pooled pages of the four retrieval sets
# (5,010, a full user's size), as much of the exact top 10 and top 20 in each set as one bit a dimension kept with
# 400, within 0.001 (docs/decisions/0023-two-bit-first-pass.md; `manage.py first_pass_recall`).
VECTOR_POOL = 2 * CANDIDATES
# The first pass over a space's passages keeps fewer: with MiniLM over the 2,936 passages of the long pages of the
# four sets pooled, 100 keep the whole exact top 10 and 0.9993 of the top 20 for the questions long pages answer
# (technical_long), as 200 do (1.0000 / 1.0000), and re-rank 100 passage rows fewer at every question for a user with
# long turns (`manage.py first_pass_recall --passages`; docs/results.md, 29 November 2026).
PASSAGE_POOL = CANDIDATES
NEIGHBOUR_HITS = 3  # the strongest fused hits whose previous and next turns may join as candidates
MAX_QUERY_TERMS = 12
TERM = re.compile(r"[^\W_]+")


# --- Memory that needs no search ------------------------------------------------------------------------------

# A turn that stated a fact a reviewer rejected is withheld from every prompt unless pinned (kept on purpose):
# every statement that reads pages for a prompt keeps only these (memory.models.tiers.Page.withheld).
QUOTABLE = "(NOT withheld OR pinned)"

RECENT_AND_PINNED_SQL = f"""
SELECT {columns(Page)} FROM memory_page
WHERE space_id = %(space)s AND ((tier = %(short_term)s AND NOT withheld) OR pinned) ORDER BY seq
"""

# The newest profile version a reviewer has approved (or that needed no review): the one prompts may use. Versions
# awaiting review or rejected never reach a prompt; the one before them stays in use meanwhile.
PROFILE_SQL = f"""
SELECT {columns(ProfileVersion)} FROM memory_profileversion
WHERE end_user_id = %(user)s AND review_state = %(approved)s ORDER BY number DESC LIMIT 1
"""

# Pinned knowledge is always included: the user's, and this assistant's about itself (approved only).
PINNED_KNOWLEDGE_SQL = f"""
SELECT {columns(KnowledgeEntry)} FROM memory_knowledgeentry
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


class SegmentScore(NamedTuple):  # made for every segment of the space on every retrieval: a tuple is cheapest
    id: int
    score: float
    cosine: float
    overlap: float


def segment_scores(rows: list[tuple], query_keywords: list[str]) -> list[SegmentScore]:
    """F(query) for every segment of the space, best first, ties by id."""
    scored, query = [], keyword_set(query_keywords)
    for segment_id, cosine, keywords in rows:
        overlap = keyword_set_jaccard(query, keyword_set(keywords))
        scored.append(SegmentScore(segment_id, cosine + overlap, cosine, overlap))  # F = cosine + Jaccard
    return sorted(scored, key=lambda s: (-s.score, s.id))


# The pages LOAD_SQL reads (by id, and the neighbours by seq), named again here for the segments they belong to.
LOADED = "space_id = %(space)s AND (id = ANY(%(ids)s) OR seq = ANY(%(seqs)s))"

# The top segments (`segments`), the pinned ones and those of the loaded pages: each part answered by its own
# index (the primary key; `segment_space_pinned`), not by walking the space's every segment to test the three.
SEGMENTS_SHOWN_SQL = f"""
SELECT {columns(Segment)} FROM memory_segment
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
    SELECT {columns(KnowledgeEntry)}, score,
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
SELECT {columns(Page)}, {PAGE_COSINE} AS score
FROM memory_page WHERE segment_id = ANY(%(segments)s) AND {QUOTABLE}
ORDER BY score DESC, seq DESC LIMIT %(limit)s
"""


@dataclass
class Candidate:
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


def fused_score(candidate: Candidate, config: RetrievalConfig) -> float:
    """One page's score: its cosine, raised by each other channel in proportion to how strongly it matched."""
    return (
        candidate.cosine
        + config.words_weight * candidate.words
        + config.date_weight * candidate.dated
        + config.segment_prior * candidate.prior
        + config.fact_weight * candidate.fact
    )


# The nearest pages by cosine, in two passes: the space's pages ranked by the Hamming distance of their two-bit
# codes (`embedding_code`: an index-only scan of `page_space_code`, 110-230 buffers for 6,000 pages, as compact as
# the index is), then the best VECTOR_POOL of those by exact cosine, found by (space, id) in the leaves of that index
# the first pass has just read (the primary key would be descended once per page). A space of at most VECTOR_POOL
# pages is ranked exactly. A long page is also ranked by its best passage (max-passage scoring, Dai & Callan 2019;
# memory.models.passages): the space's passages go through the same two passes (`passage_space_code`, PASSAGE_POOL
# re-ranked), the best `limit` pages by passage join the candidates, and each page scores the better of its own
# cosine and its best passage's; `passage` is that passage's start when it beat the page's own vector. A page finds
# its best passage in `found`'s arrays (one row, materialised): a join against `passage` was planned as a nested
# loop that scanned every passage row for every page (6.2 -> 4.2 ms p50 server time for a user with 2,500 passages,
# the same rows).
VECTOR_SQL = """
WITH near AS (
    SELECT id FROM memory_page
    WHERE space_id = %(space)s AND embedding_code IS NOT NULL
    ORDER BY embedding_code <~> memory_vector_code(%(vector)s::halfvec), id
    LIMIT %(pool)s
), near_passages AS (
    SELECT id FROM memory_pagepassage
    WHERE space_id = %(space)s
    ORDER BY embedding_code <~> memory_vector_code(%(vector)s::halfvec), id
    LIMIT %(passage_pool)s
), passages AS (
    SELECT DISTINCT ON (page_id) page_id, start, 1.0 - distance AS cosine FROM (
        SELECT page_id, start, embedding <=> %(vector)s::halfvec AS distance FROM memory_pagepassage
        WHERE space_id = %(space)s AND id = ANY(ARRAY(SELECT id FROM near_passages))
    ) scored
    ORDER BY page_id, distance, start
), passage AS (
    SELECT page_id, start, cosine FROM passages ORDER BY cosine DESC, page_id LIMIT %(limit)s
), found AS MATERIALIZED (
    SELECT array_agg(page_id) AS pages, array_agg(cosine) AS cosines, array_agg(start) AS starts FROM passage
)
SELECT id, seq, segment_id, greatest(own, coalesce(passage_cosine, 0.0)) AS cosine,
       CASE WHEN passage_cosine > coalesce(own, 0.0) THEN passage_start END AS passage
FROM (
    SELECT page.id, page.seq, page.segment_id, 1.0 - (page.embedding <=> %(vector)s::halfvec) AS own,
           found.cosines[array_position(found.pages, page.id)] AS passage_cosine,
           found.starts[array_position(found.pages, page.id)] AS passage_start
    FROM memory_page page CROSS JOIN found
    WHERE page.space_id = %(space)s AND page.id = ANY(ARRAY(SELECT id FROM near UNION SELECT page_id FROM passage))
      AND (NOT page.withheld OR page.pinned)
) scored
ORDER BY cosine DESC, id
LIMIT %(limit)s
"""


def vector_candidates(
    rows: list[tuple], segments: list[SegmentScore], config: RetrievalConfig, candidates: dict[int, Candidate]
) -> None:
    """The vector channel's pages with their cosine (a long page's may be its best passage's, whose start is then
    `found_by["passage"]`) and (for the segment prior) their segment's F."""
    f_of = {s.id: s.score for s in segments} if config.segment_prior else {}
    for page_id, seq, segment_id, cosine, passage in rows:
        candidate = candidates.setdefault(page_id, Candidate(page_id, seq))
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
    SELECT {terms}, {either} AS either, {shares}, {any_rare} AS any_rare,
           memory_search_keys(%(space)s, CASE WHEN {any_rare} THEN {rare_documents} ELSE {documents} END) AS keys
    FROM (SELECT {parsed}, {share_of}) parsed
), hits AS MATERIALIZED (
    SELECT id, ctid AS address, {matches}
    FROM {page}, terms
    WHERE search_keys && terms.keys
), counted AS (
    SELECT (SELECT next_seq - 1 FROM {space} WHERE id = %(space)s)::float8 AS n, {frequencies} FROM hits
), idf AS (
    SELECT {idf}, {mass} AS mass FROM (SELECT n, {estimated} FROM counted, terms) totals
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


# The share of all pages that hold term i's lexeme when it is common (%(common)s, %(common_shares)s), else 0.
SHARE_OF = """(SELECT coalesce(max(share), 0.0)
    FROM unnest(%(common)s::text[], %(common_shares)s::float8[]) AS common(lexeme, share)
    WHERE lexeme = ANY(tsvector_to_array(to_tsvector('english', %(t{i})s))))"""


@cache
def lexical_sql(n_terms: int) -> str:
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
    lookup by id reads four; stable within the statement, whose snapshot keeps the row versions it saw).

    A question's common words (`memory.retrieval.common_terms`: held by more than COMMON_SHARE of all pages, by the
    table's statistics) find no pages of their own when it has a word that is not common: only the rarer words'
    keys are looked up, and a common word adds its weight to the pages they found that hold it, its document
    frequency estimated as its share of all pages times N. A question of common words alone looks all of them up."""
    rare = [f"(f{i} = 0 AND numnode(q{i}) > 0)" for i in range(n_terms)]
    return LEXICAL_SQL.format(
        page=Page._meta.db_table,
        space=MemorySpace._meta.db_table,
        parsed=", ".join(f"plainto_tsquery('english', %(t{i})s) AS q{i}" for i in range(n_terms)),
        terms=", ".join(f"q{i}" for i in range(n_terms)),
        either="(" + " || ".join(f"q{i}" for i in range(n_terms)) + ")",
        documents=" || ".join(f"to_tsvector('english', %(t{i})s)" for i in range(n_terms)),
        rare_documents=" || ".join(
            f"(CASE WHEN {rare[i]} THEN to_tsvector('english', %(t{i})s) ELSE ''::tsvector END)" for i in range(n_terms)
        ),
        any_rare="(" + " OR ".join(rare) + ")",
        shares=", ".join(f"f{i}" for i in range(n_terms)),
        share_of=", ".join(f"{SHARE_OF.format(i=i)} AS f{i}" for i in range(n_terms)),
        estimated=", ".join(
            f"CASE WHEN terms.any_rare AND terms.f{i} > 0 THEN terms.f{i} * n ELSE d{i} END AS d{i}"
            for i in range(n_terms)
        ),
        matches=", ".join(f"(space_id = %(space)s AND search @@ terms.q{i})::int AS m{i}" for i in range(n_terms)),
        frequencies=", ".join(f"sum(m{i})::float8 AS d{i}" for i in range(n_terms)),
        idf=", ".join(f"ln(1.0 + (n - d{i} + 0.5) / (d{i} + 0.5)) AS w{i}" for i in range(n_terms)),
        mass=" + ".join(f"ln(1.0 + (n - d{i} + 0.5) / (d{i} + 0.5))" for i in range(n_terms)),
        flags=", ".join(f"m{i}" for i in range(n_terms)),
        held=", ".join(f"weighted.m{i}" for i in range(n_terms)),
        held_any=" + ".join(f"m{i}" for i in range(n_terms)) + " > 0",
        weight=" + ".join(f"m{i} * w{i}" for i in range(n_terms)),
    )


def lexical_params(space: MemorySpace, terms: list[str], vector: str, common: CommonTerms | None = None) -> dict:
    """`lexical_sql`'s parameters; `common` (the words most pages hold) defaults to none."""
    return {
        "space": space.id,
        "vector": vector,
        "limit": CANDIDATES,
        **(common or CommonTerms()).params(),
        **{f"t{i}": term for i, term in enumerate(terms)},
    }


def lexical_candidates(rows: list[tuple], terms: list[str], candidates: dict[int, Candidate]) -> None:
    """Pages holding any of the query's terms (at most CANDIDATES, the best by the summed IDF of the terms they
    hold), each with the share of the query's IDF mass it holds: a page holding the rare words and names of the
    question scores near 1, one holding only a common word near 0. Document frequencies are counted in the
    database; the page's cosine comes with it, so a page only this channel found still has its vector's say."""
    for page_id, seq, *flags, weight, _rank, mass, cosine in rows:
        words = [term for term, hit in zip(terms, flags, strict=True) if hit]
        candidate = candidates.setdefault(page_id, Candidate(page_id, seq))
        candidate.words = float(weight) / float(mass) if mass else 0.0
        candidate.cosine = max(candidate.cosine, float(cosine))  # the vector channel's may be a passage's
        candidate.found_by["words"] = words


def time_statement(time_range: TimeRange) -> tuple[str, dict]:
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


def time_candidates(rows: list[tuple], time_range: TimeRange, candidates: dict[int, Candidate]) -> None:
    for page_id, seq, cosine in rows:
        candidate = candidates.setdefault(page_id, Candidate(page_id, seq))
        candidate.cosine = max(candidate.cosine, float(cosine))
        candidate.dated = True
        candidate.found_by["date"] = time_range.label


def fact_candidates(space: MemorySpace, result: RetrievalResult, candidates: dict[int, Candidate]) -> None:
    """The pages of this space behind the retrieved facts, each with the cosine of the best fact it stated (a page
    not otherwise found keeps cosine 0 until loaded: its fact is its evidence)."""
    facts = sorted([*result.user_knowledge, *result.assistant_knowledge], key=lambda k: (-k.score, k.entry.id))
    if not facts:
        return
    through = KnowledgeEntry.source_pages.through
    quotable = models.Q(page__withheld=False) | models.Q(page__pinned=True)
    links = through.objects.filter(quotable, knowledgeentry_id__in=[k.entry.id for k in facts], page__space=space)
    rows = links.values_list("knowledgeentry_id", "page_id", "page__seq")
    seq_of = {page_id: seq for _, page_id, seq in rows}
    best: dict[int, tuple[float, int]] = {}
    score_of = {k.entry.id: k.score for k in facts}
    for entry_id, page_id, _ in rows:
        if score_of[entry_id] > best.get(page_id, (-1.0, 0))[0]:
            best[page_id] = (score_of[entry_id], entry_id)
    for page_id, (score, entry_id) in best.items():
        candidate = candidates.setdefault(page_id, Candidate(page_id, seq_of[page_id]))
        candidate.fact = max(float(score), 0.0)
        candidate.found_by.setdefault("fact", entry_id)


def neighbour_seqs(hits: list[Candidate]) -> dict[int, int]:
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
LOAD_SQL = f"SELECT {columns(Page)}, {PAGE_COSINE} AS cosine FROM memory_page WHERE ({LOADED}) AND {QUOTABLE}"


def fuse_neighbours(
    pages: dict[int, Page],
    pool: list[Candidate],
    neighbour_seqs: dict[int, int],
    candidates: dict[int, Candidate],
    config: RetrievalConfig,
) -> None:
    """A loaded neighbour that is about the question too (cosine ≥ neighbour_floor) scores at least
    `neighbour_share` of its hit's score and never above the hit (its evidence is the hit's); a neighbour below the
    floor is dropped, like every loaded page outside the pool. Every loaded page gets its exact cosine."""
    by_seq = {p.seq: p for p in pages.values()}
    for seq, hit_id in neighbour_seqs.items():
        page = by_seq.get(seq)
        if page is None or extra_float(page, "cosine") < config.neighbour_floor:
            continue
        candidate = candidates.setdefault(page.id, Candidate(page.id, seq))
        candidate.cosine = max(candidate.cosine, extra_float(page, "cosine"))
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
            candidate.cosine = extra_float(page, "cosine")
            candidate.fused = fused_score(candidate, config)
        candidate.cosine = max(candidate.cosine, extra_float(page, "cosine"))  # a passage's may exceed the page's


_NONE = Candidate(0, 0)
