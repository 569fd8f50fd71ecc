"""How a retrieval ranks: the fusion weights and channels of the default, and MemoryOS's published pipeline (PAPER)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


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


def retrieval_config() -> RetrievalConfig:
    """The configured pipeline: MEMORY_RETRIEVAL is "hybrid" (the default) or "paper"."""
    return PAPER if settings.MEMORY_RETRIEVAL == "paper" else DEFAULT
