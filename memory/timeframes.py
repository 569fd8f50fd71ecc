"""The time a question points at ("in May 2023", "on 13 October, 2023", "in June", "last week"), as a range, and
how far ahead of now a stored turn may be dated.

Pure functions of the text and `now`; no network, no model. A small parser rather than a general one: questions
name months, days and years, or a few relative spans, and a wrong guess only costs a soft boost in retrieval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
# Most specific first: a day and a year, a month and a year, a bare year, then a month said after a preposition
# (a bare "may" or "march" is more often a verb than a month).
PATTERNS = [
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.IGNORECASE)),
    ("year", re.compile(rf"\b(?:in|during|of|since|by|from)\s+{_YEAR}\b", re.IGNORECASE)),
    ("any_month", re.compile(rf"\b(?:in|during|early|late|mid|of|since|by)[\s-]+{_MONTH}\b", re.IGNORECASE)),
]
RELATIVE = {
    "yesterday": (timedelta(days=1), timedelta(days=1)),
    "last week": (timedelta(days=7), timedelta(days=7)),
    "last weekend": (timedelta(days=7), timedelta(days=7)),
    "last month": (timedelta(days=31), timedelta(days=31)),
    "last year": (timedelta(days=365), timedelta(days=365)),
}


@dataclass(frozen=True)
class TimeRange:
    """Pages dated in [start, end) are in range; with `month` set instead, pages of that month in any year."""

    label: str
    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None


def query_time_range(text: str, now: datetime) -> TimeRange | None:
    """The first date, month, year or relative span the text names, resolved against `now`; None if none."""
    for kind, pattern in PATTERNS:
        match = pattern.search(text)
        if match:
            found = _resolve(kind, match, now)
            if found is not None:
                return found
    lowered = text.lower()
    for phrase, (back, length) in RELATIVE.items():
        if re.search(rf"\b{phrase}\b", lowered):
            start = (now - back).replace(hour=0, minute=0, second=0, microsecond=0)
            return TimeRange(label=phrase, start=start, end=start + length + timedelta(days=1))
    return None


def _resolve(kind: str, match: re.Match[str], now: datetime) -> TimeRange | None:
    groups = match.groupdict()
    month = MONTHS.get((groups.get("month") or "").lower())
    year = int(groups["year"]) if groups.get("year") else None
    tz = now.tzinfo
    if kind == "day":
        assert year is not None and month is not None  # the patterns name both
        try:
            start = datetime(year, month, int(groups["day"]), tzinfo=tz)
        except ValueError:
            return None
        return TimeRange(label=f"{start:%-d %B %Y}", start=start, end=start + timedelta(days=1))
    if kind == "month":
        assert year is not None and month is not None  # the pattern names both
        start = datetime(year, month, 1, tzinfo=tz)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
        return TimeRange(label=f"{start:%B %Y}", start=start, end=end)
    if kind == "year":
        assert year is not None  # the pattern names it
        start = datetime(year, 1, 1, tzinfo=tz)
        return TimeRange(label=str(year), start=start, end=datetime(year + 1, 1, 1, tzinfo=tz))
    assert month is not None  # any_month's pattern names it
    return TimeRange(label=datetime(2000, month, 1).strftime("%B"), month=month)


# Clocks disagree by hours, not days: a turn dated further ahead is a mistake or an attack, and would never age
# (retention removes pages by age, heat by recency).
FUTURE_TOLERANCE = timedelta(days=1)


def too_far_ahead(at: datetime, *, now: datetime) -> bool:
    """Whether a turn dated `at` is more than FUTURE_TOLERANCE after `now`, and must be refused."""
    return at > now + FUTURE_TOLERANCE
