"""Tenant-supplied government-id patterns cannot hang a worker or a request: they run on RE2, in linear time, and a
pattern RE2 cannot run is refused when saved; one saved before that check runs on `regex` with a time limit, and
fails closed, audited, when it runs out of time on a text.

The pathological texts here would keep Python's `re` busy for longer than the universe has existed; each test runs
under an alarm (`hangs_no_longer_than`) so that code without the timeout fails instead of hanging the suite.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest

from memory.models import AuditEntry, Page, PersonalDataPolicy
from memory.personal_data import (
    CATEGORIES,
    WITHHELD_MASK,
    Detector,
    InvalidPattern,
    government_id_patterns_check,
)
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor
from memory.services.personal_data import PolicyError, personal_data_policy_update, review_state_for
from tests import builders

BACKTRACKING = r"(a|aa)+$"  # each run of a's splits 2^n ways before the "!" fails the match, on a backtracking engine
# The same with a look-ahead, which RE2 cannot run: only a pattern saved before the check can be one
LEGACY = r"(?=a)(a|aa)+$"
TRAP = "a" * 60 + "!"


class StillRunning(Exception):
    """The code under test was still matching when its alarm rang."""


@contextmanager
def hangs_no_longer_than(seconds: float):
    def ring(signum, frame):
        raise StillRunning(f"still matching after {seconds} s: the pattern ran without a timeout")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def tenant(space):
    return space.tenant


def stored_before_the_check(tenant, patterns: list[str]) -> None:
    """A policy row saved before patterns were probed (the row is written as it was, not through the service)."""
    builders.personal_data_policy(tenant, government_id="do_not_store")
    PersonalDataPolicy.objects.filter(tenant=tenant).update(government_id_patterns=patterns)


@pytest.mark.parametrize("pattern", [r"(a+)+$", BACKTRACKING, r"(\w+\s?)+$"])
def test_a_pattern_that_would_backtrack_catastrophically_is_saved_and_runs_in_linear_time(pattern):
    assert government_id_patterns_check([r"\d{9}", pattern]) == [r"\d{9}", pattern]

    with hangs_no_longer_than(5):
        assert Detector.configured(government_id_patterns=[pattern]).find(TRAP * 100) == []


@pytest.mark.parametrize("pattern", [LEGACY, r"(a)\1", r"(?<!x)\d{9}"])
def test_a_pattern_re2_cannot_run_is_refused_when_saved(pattern):
    with pytest.raises(InvalidPattern, match="cannot be run in linear time"):
        government_id_patterns_check([r"\d{9}", pattern])


def test_ordinary_patterns_are_saved():
    patterns = [r"\b\d{3}-\d{2}-\d{4}\b", r"\b[A-Z]{2}\d{6}[A-D]\b", r"\bP\d{7}(?:-\d)?\b"]

    assert government_id_patterns_check(patterns) == patterns


def test_the_policy_refuses_a_pattern_re2_cannot_run_with_its_reason_and_saves_nothing(tenant):
    with pytest.raises(PolicyError, match=r"government id patterns: .*cannot be run in linear time"):
        personal_data_policy_update(tenant=tenant, actor=Actor.system("t"), reason="r", government_id_patterns=[LEGACY])

    assert not PersonalDataPolicy.objects.filter(tenant=tenant).exists()


def test_a_pattern_that_times_out_withholds_only_the_lines_it_could_not_check(monkeypatch):
    # the text's budget is wall time: on a loaded machine the two timeouts alone can spend 0.25 s, and the last line
    # would then be withheld for the budget, not for its content
    monkeypatch.setattr("memory.personal_data.GOVERNMENT_ID_TEXT_BUDGET", 4.0)
    detector = Detector.configured(government_id_patterns=[LEGACY])
    text = f"Mail ann@example.com\n{TRAP}\nmy id is aa"

    with hangs_no_longer_than(5):
        redacted = detector.redact(text, CATEGORIES)

    assert redacted == f"Mail [email]\n{WITHHELD_MASK}\nmy id is [government id]"


def test_a_withheld_line_wins_over_the_findings_inside_it():
    detector = Detector.configured(government_id_patterns=[LEGACY])

    with hangs_no_longer_than(5):
        findings = detector.find(f"ann@example.com {TRAP}")

    assert [(f.category, f.timed_out_pattern) for f in findings] == [("government_id", LEGACY)]


def test_under_do_not_store_a_timed_out_line_is_never_stored_and_the_timeout_is_audited(
    space, tenant, django_capture_on_commit_callbacks
):
    stored_before_the_check(tenant, [LEGACY])

    with hangs_no_longer_than(5), django_capture_on_commit_callbacks(execute=True):
        page = builders.turn(space, user_message=f"Booking ref below\n{TRAP}", assistant_reply="Noted.").page

    assert Page.objects.get(pk=page.pk).user_message == f"Booking ref below\n{WITHHELD_MASK}"
    entry = AuditEntry.objects.get(tenant=tenant, action="personal_data.pattern_timeout")
    assert entry.detail == {"patterns": [LEGACY], "withheld_characters": len(TRAP), "text_characters": 79}
    assert TRAP not in str(entry.detail)


def test_a_text_a_pattern_times_out_on_is_held_for_review_as_sensitive(tenant):
    stored_before_the_check(tenant, [LEGACY])
    PersonalDataPolicy.objects.filter(tenant=tenant).update(review_mode="review_sensitive")

    with hangs_no_longer_than(5):
        state = review_state_for(personal_data_policy_or_default(tenant=tenant), f"Likes tea. {TRAP}")

    assert state == "pending"
