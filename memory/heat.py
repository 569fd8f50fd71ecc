"""Heat, recency and the segment-matching score F: pure functions of their inputs and `now`.

heat = α·N_visit + β·L_interaction + γ·R_recency, R_recency = exp(−Δt/μ), Δt since the segment was last touched.
F(s) = cos(e_s, e_p) + Jaccard(K_s, K_p). `heat_sql` is the same heat formula as a database expression, for
sorting and aggregating segments in SQL; a test keeps the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import DurationField, Expression, ExpressionWrapper, F, FloatField, Value
from django.db.models.functions import Cast, Exp, Extract, Greatest


@dataclass(frozen=True)
class Heat:
    """A segment's heat with its components, as an operator sees it."""

    n_visit: int
    l_interaction: int
    r_recency: float
    value: float


def recency_decay(seconds: float, mu: float | None = None) -> float:
    """exp(−Δt/μ) for Δt in seconds; a negative Δt (a touch in the future, clock skew) counts as none."""
    mu = settings.MEMORY_RECENCY_MU if mu is None else mu
    return math.exp(-max(seconds, 0.0) / mu)


def recency(last_touched_at: datetime, now: datetime, mu: float | None = None) -> float:
    """exp(−Δt/μ), Δt since `last_touched_at`; a touch in the future (clock skew) counts as now."""
    return recency_decay((now - last_touched_at).total_seconds(), mu)


def heat_terms(n_visit: int, l_interaction: int, r_recency: float) -> tuple[float, float, float]:
    """The three weighted terms of heat, α·N_visit, β·L_interaction and γ·R_recency; their sum is the heat."""
    return (
        settings.MEMORY_HEAT_ALPHA * n_visit,
        settings.MEMORY_HEAT_BETA * l_interaction,
        settings.MEMORY_HEAT_GAMMA * r_recency,
    )


def heat_of(*, n_visit: int, l_interaction: int, last_touched_at: datetime, now: datetime) -> Heat:
    """The heat of a segment's counters at `now`, with the configured α, β, γ and μ."""
    r = recency(last_touched_at, now)
    visits, interaction, recent = heat_terms(n_visit, l_interaction, r)
    return Heat(n_visit=n_visit, l_interaction=l_interaction, r_recency=r, value=visits + interaction + recent)


def heat_sql(now: datetime, prefix: str = "") -> Expression:
    """`heat_of` as a SQL expression over a segment row at `now`, with the configured α, β, γ and μ.

    `prefix` reaches the segment through relations (e.g. "memory_spaces__segments__"). Builds an expression only:
    no query is run.
    """
    delta = ExpressionWrapper(Value(now) - F(f"{prefix}last_touched_at"), output_field=DurationField())
    age = Cast(Extract(delta, "epoch"), FloatField())
    r_recency = Exp(-Greatest(age, Value(0.0)) / Value(float(settings.MEMORY_RECENCY_MU)))
    return ExpressionWrapper(
        Value(float(settings.MEMORY_HEAT_ALPHA)) * F(f"{prefix}n_visit")
        + Value(float(settings.MEMORY_HEAT_BETA)) * F(f"{prefix}l_interaction")
        + Value(float(settings.MEMORY_HEAT_GAMMA)) * r_recency,
        output_field=FloatField(),
    )


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
    return keyword_set_jaccard(keyword_set(a), keyword_set(b))


def keyword_set(keywords: Iterable[str]) -> set[str]:
    """Keywords as jaccard compares them: lowercase, each once."""
    return {k.lower() for k in keywords}


def keyword_set_jaccard(a: set[str], b: set[str]) -> float:
    """jaccard of two keyword sets already made by `keyword_set` (one side made once for many comparisons)."""
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0


def f_score(cosine: float, keywords_a: Iterable[str], keywords_b: Iterable[str]) -> float:
    """F = cosine + Jaccard: the segment-matching score of the paper."""
    return cosine + jaccard(keywords_a, keywords_b)


def joins_segment(f: float) -> bool:
    """A page joins the best segment when its F reaches θ (the boundary joins)."""
    return f >= settings.MEMORY_MERGE_THRESHOLD
