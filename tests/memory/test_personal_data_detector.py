"""The personal-data detector: each category, overlaps, masks, pattern checks, and its scores on the labelled corpus."""

from __future__ import annotations

import pytest

from evaluation.personal_data_eval import corpus_score
from memory.personal_data import (
    CATEGORIES,
    DEFAULT_GOVERNMENT_ID_PATTERNS,
    Detector,
    InvalidPattern,
    government_id_patterns_check,
    iban_valid,
    luhn_valid,
)

DETECTOR = Detector.configured(region="GB", government_id_patterns=DEFAULT_GOVERNMENT_ID_PATTERNS)


def categories_in(text: str) -> list[tuple[str, str]]:
    return [(f.category, f.value) for f in DETECTOR.find(text)]


def test_it_finds_each_category_with_its_value():
    text = (
        "Mail ann@example.com or call 07911 123456; card 4242 4242 4242 4242, IBAN GB82 WEST 1234 5698 7654 32, "
        "SSN 123-45-6789, key AKIAIOSFODNN7EXAMPLE."
    )

    assert categories_in(text) == [
        ("email", "ann@example.com"),
        ("phone", "07911 123456"),
        ("card", "4242 4242 4242 4242"),
        ("iban", "GB82 WEST 1234 5698 7654 32"),
        ("government_id", "123-45-6789"),
        ("secret", "AKIAIOSFODNN7EXAMPLE"),
    ]


def test_masks_name_the_category_and_a_card_keeps_its_last_four_digits():
    redacted = DETECTOR.redact("card 4242 4242 4242 4242 and ann@example.com", CATEGORIES)

    assert redacted == "card [card ending 4242] and [email]"


def test_only_the_asked_categories_are_redacted():
    assert DETECTOR.redact("ann@example.com, 07911 123456", {"phone"}) == "ann@example.com, [phone]"


def test_a_card_number_is_not_also_a_phone_number():
    assert categories_in("4111111111111111") == [("card", "4111111111111111")]


def test_a_password_written_in_a_sentence_loses_only_its_value():
    assert DETECTOR.redact("my password is hunter2.", CATEGORIES) == "my password is [secret]."
    assert DETECTOR.redact("my password is wrong", CATEGORIES) == "my password is wrong"


def test_numbers_failing_their_checksums_are_not_cards_or_ibans():
    assert not luhn_valid("4242424242424241") and luhn_valid("4242424242424242")
    assert not iban_valid("GB82WEST12345698765431") and iban_valid("GB82WEST12345698765432")
    assert categories_in("order 4242 4242 4242 4241, ref GB82 WEST 1234 5698 7654 31") == []


def test_phone_numbers_are_read_in_the_tenants_region():
    us = Detector.configured(region="US")

    assert categories_in("call (415) 555-2671") == []
    assert [f.category for f in us.find("call (415) 555-2671")] == ["phone"]


def test_government_id_patterns_are_checked_before_use():
    assert government_id_patterns_check([" \\d{9} ", ""]) == ["\\d{9}"]
    with pytest.raises(InvalidPattern, match="not a valid regular expression"):
        government_id_patterns_check(["[unclosed"])
    with pytest.raises(InvalidPattern, match="matches empty text"):
        government_id_patterns_check(["\\d*"])


@pytest.mark.parametrize("category", CATEGORIES)
def test_on_the_labelled_corpus_each_category_has_precision_and_recall_of_at_least_0_8(category):
    scores, items, _ = corpus_score()

    assert items >= 90
    assert scores[category].precision >= 0.8, scores[category].false_alarms
    assert scores[category].recall >= 0.8, scores[category].misses
