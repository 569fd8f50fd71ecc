"""Heat, recency and F: the spec's formulas with fixed times and at their boundaries."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from memory.heat import f_score, heat_of, heat_sql, heat_terms, is_hot, jaccard, joins_segment, recency, segment_heat
from memory.models import Segment

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_recency_is_one_for_a_segment_touched_now():
    assert recency(NOW, NOW) == 1.0


def test_recency_decays_with_the_paper_time_constant():
    assert recency(NOW - timedelta(seconds=1e7), NOW) == pytest.approx(math.exp(-1))
    assert recency(NOW - timedelta(days=30), NOW) == pytest.approx(math.exp(-30 * 86400 / 1e7))


def test_recency_of_an_untouched_segment_really_cools_down_over_a_year():
    assert recency(NOW - timedelta(days=365), NOW) < 0.05


def test_a_touch_in_the_future_counts_as_now():
    assert recency(NOW + timedelta(hours=1), NOW) == 1.0


def test_heat_adds_visits_interactions_and_recency_with_unit_weights():
    heat = heat_of(n_visit=2, l_interaction=3, last_touched_at=NOW - timedelta(seconds=1e7), now=NOW)
    assert heat.value == pytest.approx(2 + 3 + math.exp(-1))
    assert (heat.n_visit, heat.l_interaction) == (2, 3)
    assert heat.r_recency == pytest.approx(math.exp(-1))


def test_heat_uses_the_configured_weights(settings):
    settings.MEMORY_HEAT_ALPHA, settings.MEMORY_HEAT_BETA, settings.MEMORY_HEAT_GAMMA = 2.0, 0.5, 0.0
    assert heat_of(n_visit=1, l_interaction=4, last_touched_at=NOW, now=NOW).value == pytest.approx(4.0)


def test_a_segment_at_exactly_tau_is_hot_and_just_below_is_not():
    assert is_hot(heat_of(n_visit=0, l_interaction=4, last_touched_at=NOW, now=NOW))  # 4 + 1 = 5 = τ
    assert not is_hot(heat_of(n_visit=0, l_interaction=4, last_touched_at=NOW - timedelta(seconds=1), now=NOW))


def test_jaccard_is_intersection_over_union_ignoring_case():
    assert jaccard(["Hiking", "dog"], ["hiking", "cat", "park"]) == pytest.approx(1 / 4)
    assert jaccard([], []) == 0.0


def test_f_adds_cosine_and_keyword_overlap():
    assert f_score(0.4, ["a", "b"], ["b", "c"]) == pytest.approx(0.4 + 1 / 3)


def test_a_page_joins_at_exactly_theta_and_not_below():
    assert joins_segment(0.6)
    assert not joins_segment(0.5999)


def test_the_heat_terms_are_the_weighted_counters_and_add_up_to_the_heat(settings):
    settings.MEMORY_HEAT_ALPHA, settings.MEMORY_HEAT_BETA, settings.MEMORY_HEAT_GAMMA = 2.0, 0.5, 3.0
    assert heat_terms(3, 4, 0.5) == (6.0, 2.0, 1.5)
    heat = heat_of(n_visit=3, l_interaction=4, last_touched_at=NOW - timedelta(days=40), now=NOW)
    assert heat.value == sum(heat_terms(3, 4, heat.r_recency))


@pytest.mark.parametrize(
    ("age", "n_visit", "l_interaction"),
    [
        (timedelta(0), 0, 0),
        (timedelta(seconds=1), 0, 4),
        (timedelta(hours=5, minutes=3), 2, 7),
        (timedelta(days=115, seconds=42), 9, 1),
        (timedelta(days=400), 30, 60),
        (-timedelta(hours=1), 1, 1),  # a touch in the future counts as now
    ],
)
def test_the_sql_heat_equals_the_python_heat(space, settings, age, n_visit, l_interaction):
    settings.MEMORY_HEAT_ALPHA, settings.MEMORY_HEAT_BETA, settings.MEMORY_HEAT_GAMMA = 1.5, 0.25, 2.0
    settings.MEMORY_RECENCY_MU = 5e6
    segment = Segment.objects.create(
        space=space, summary="s", keywords=[], n_visit=n_visit, l_interaction=l_interaction, last_touched_at=NOW - age
    )
    in_sql = Segment.objects.annotate(heat=heat_sql(NOW)).values_list("heat", flat=True).get(pk=segment.pk)
    assert in_sql == pytest.approx(segment_heat(segment, NOW).value, rel=1e-12, abs=1e-12)
