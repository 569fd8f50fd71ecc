"""The time a question names, resolved to a range of page dates."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.timeframes import query_time_range

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def test_a_day_month_and_year_resolve_to_that_day():
    for text in ("What did she show on October 13, 2023?", "What happened on 13 October, 2023?"):
        found = query_time_range(text, NOW)
        assert (found.start, found.end) == (datetime(2023, 10, 13, tzinfo=UTC), datetime(2023, 10, 14, tzinfo=UTC))
        assert found.label == "13 October 2023"


def test_a_month_and_year_resolve_to_that_month_and_december_ends_with_the_year():
    found = query_time_range("Where did they go in December 2022?", NOW)
    assert (found.start, found.end, found.label) == (
        datetime(2022, 12, 1, tzinfo=UTC),
        datetime(2023, 1, 1, tzinfo=UTC),
        "December 2022",
    )


def test_a_month_without_a_year_matches_that_month_of_any_year():
    found = query_time_range("When did Melanie go camping in June?", NOW)
    assert (found.month, found.start, found.label) == (6, None, "June")


def test_a_bare_may_is_a_verb_not_a_month():
    assert query_time_range("What may Caroline want to do next?", NOW) is None


def test_relative_spans_count_back_from_now():
    found = query_time_range("What did I cook last week?", NOW)
    assert found.start == datetime(2026, 11, 17, tzinfo=UTC) and found.end > found.start


def test_a_question_without_a_time_has_no_range():
    assert query_time_range("What is Caroline's relationship status?", NOW) is None
