"""Heat, recency and the segment-matching score F: pure functions of their inputs and `now`.

heat = α·N_visit + β·L_interaction + γ·R_recency, R_recency = exp(−Δt/μ), Δt since the segment was last touched.
F(s) = cos(e_s, e_p) + Jaccard(K_s, K_p).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings


@dataclass(frozen=True)
class Heat:
    """A segment's heat with its components, as an operator sees it."""

    n_visit: int
    l_interaction: int
    r_recency: float
    value: float


def recency(last_touched_at: datetime, now: datetime, mu: float | None = None) -> float:
    """exp(−Δt/μ); a touch in the future (clock skew) counts as now."""
    mu = settings.MEMORY_RECENCY_MU if mu is None else mu
    seconds = max((now - last_touched_at).total_seconds(), 0.0)
    return math.exp(-seconds / mu)


def heat_of(*, n_visit: int, l_interaction: int, last_touched_at: datetime, now: datetime) -> Heat:
    """The heat of a segment's counters at `now`, with the configured α, β, γ and μ."""
    r = recency(last_touched_at, now)
    value = (
        settings.MEMORY_HEAT_ALPHA * n_visit
        + settings.MEMORY_HEAT_BETA * l_interaction
        + settings.MEMORY_HEAT_GAMMA * r
    )
    return Heat(n_visit=n_visit, l_interaction=l_interaction, r_recency=r, value=value)


def segment_heat(segment, now: datetime) -> Heat:
    return heat_of(
        n_visit=segment.n_visit,
        l_interaction=segment.l_interaction,
        last_touched_at=segment.last_touched_at,
        now=now,
    )


def is_hot(heat: Heat) -> bool:
    """Hot enough to promote: heat ≥ τ (the boundary counts as hot)."""
    return heat.value >= settings.MEMORY_PROMOTION_THRESHOLD


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B| over keyword sets, case-insensitive; 0 when both are empty."""
    set_a = {k.lower() for k in a}
    set_b = {k.lower() for k in b}
    union = set_a | set_b
    return len(set_a & set_b) / len(union) if union else 0.0


def f_score(cosine: float, keywords_a: Iterable[str], keywords_b: Iterable[str]) -> float:
    """F = cosine + Jaccard: the segment-matching score of the paper."""
    return cosine + jaccard(keywords_a, keywords_b)


def joins_segment(f: float) -> bool:
    """A page joins the best segment when its F reaches θ (the boundary joins)."""
    return f >= settings.MEMORY_MERGE_THRESHOLD
