"""Finding copies of forgotten text: cut with "…", re-spaced, re-cased, JSON-escaped; only the copy is replaced."""

from __future__ import annotations

import json

from memory.quotes import quote, quotes_of, redact, redact_json

SAID = "I moved to Zürich  last spring with my partner Håkon and our two old tabby cats."


def test_an_exact_copy_is_replaced_and_nothing_around_it():
    assert redact(f"You said: {SAID} Anything else?", quotes_of([SAID])) == "You said: [forgotten] Anything else?"


def test_a_copy_re_spaced_re_cased_and_cut_with_an_ellipsis_is_found():
    copy = "you said: “i moved to ZÜRICH last spring with my partner…” and more"
    assert redact(copy, quotes_of([SAID])) == "you said: “[forgotten]” and more"


def test_a_copy_cut_at_the_end_of_a_field_is_found():
    assert redact(SAID[:60], quotes_of([SAID])) == "[forgotten]"


def test_a_json_escaped_copy_is_found_in_text_and_in_json_values():
    escaped = json.dumps({"text": SAID})
    assert "Z\\u00fcrich" in escaped
    assert "Zürich" not in redact(escaped, quotes_of([SAID]))
    assert redact_json({"reply": [f"Quote: {SAID}"], "n": 1}, quotes_of([SAID])) == {
        "reply": ["Quote: [forgotten]"],
        "n": 1,
    }


def test_a_different_sentence_with_the_same_opening_is_not_a_copy():
    other = "I moved to Zürich last spring with my sister and her dog."
    assert redact(other, quotes_of([SAID])) == other


def test_short_sentences_are_too_common_to_count_as_quotes():
    assert quotes_of(["Thanks a lot!"]) == []


def test_the_anchor_is_a_plain_word_every_copy_keeps():
    assert quote(SAID).anchor == "moved"
    assert quote("Zürich Håkon Ödön and friends came along to the lake").anchor == "and"


def test_a_copy_without_the_closing_punctuation_is_still_a_copy():
    told = quote("You moved to Zürich with your partner Håkon.")

    assert redact("You moved to Zurich with your partner Hakon — you told me on 22 Nov.", [told]) == (
        "[forgotten] — you told me on 22 Nov."
    )
