"""What a statement gives the value of: a later statement of the same thing, with another value, replaces it."""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import UTC, datetime

import pytest

from memory import validity
from memory.validity import Claim, claims, current_claims, first_slot, replaced_by, same_value

STATEMENTS = [
    ("I drink a flat white every morning.", "drink", "flat white"),
    ("The user drinks a flat white every morning.", "drink", "flat white"),
    ("These days I have a matcha latte every morning.", "drink", "matcha latte"),
    ("I live in Porto.", "home", "porto"),
    ("We moved to Leeds last week!", "home", "leeds"),
    ("The user moved to New York City in May.", "home", "new york city"),
    ("Writing this from our new apartment in Osaka.", "home", "osaka"),
    ("I work at Northwind Logistics.", "employer", "northwind logistics"),
    ("I've started a new job at Arcadis.", "employer", "arcadis"),
    ("I work as a barista at Grindhouse Coffee.", "occupation", "barista at grindhouse coffee"),
    ("I'm now a data analyst, finally.", "occupation", "data analyst"),
    ("My dog is called Biscuit.", "pet:dog", "biscuit"),
    ("My trip to Lisbon was moved to 14 March.", "trip:lisbon", "14 march"),
    ("Our flight to Kyoto is on March 3rd.", "trip:kyoto", "march 3rd"),
    ("My favourite band is Radiohead.", "favourite:band", "radiohead"),
    ("I drive a red Mazda 3.", "car", "red mazda 3"),
    ("I'm vegetarian now.", "diet", "vegetarian"),
    ("My name is Alice Smith.", "name", "alice smith"),
    ("Our place in Leeds is tiny but we love it.", "home", "leeds"),
    ("We packed everything up and relocated to Denver!", "home", "denver"),
    ("I signed the lease on a flat in Ghent.", "home", "ghent"),
    ("My mornings don't start until I've had a flat white.", "drink", "flat white"),
    ("Every day begins with a matcha latte for me.", "drink", "matcha latte"),
    ("I quit the old habit and now have a rooibos with honey instead.", "drink", "rooibos with honey"),
    ("I finally bought a car: a red Mazda 3!", "car", "red mazda 3"),
    ("We leave for Cape Town on 3 June 2024.", "trip:cape town", "3 june 2024"),
    ("The airline cancelled our flight, so Lisbon is now on 14 March.", "trip:lisbon", "14 march"),
    ("We pushed the Kyoto trip back, the new departure is 30 June.", "trip:kyoto", "30 june"),
]


@pytest.mark.parametrize(("text", "slot", "value"), STATEMENTS)
def test_a_first_person_statement_claims_the_value_of_its_slot(text, slot, value):
    assert Claim(slot, value) in claims(text)


@pytest.mark.parametrize(
    "text",
    [
        "Where do I live?",
        "What do I drink in the morning?",
        "I have a coffee with Bob tomorrow.",
        "I have a meeting at Google.",
        "My sister lives in Porto.",
        "Tom drinks green tea.",
        "I'm a bit tired today.",
        "I visited a house in Porto with a friend.",
        "Tom moved to Leeds.",
        "The train moved to platform 4 and I ran.",
        "Tom leaves for Paris on 3 May.",
        "",
    ],
)
def test_questions_other_people_and_passing_events_claim_nothing(text):
    assert claims(text) == []


def test_giving_something_up_ends_it_and_the_new_habit_stands():
    said = claims("Actually I've given up coffee, I now drink green tea")
    assert said == [Claim("drink", "coffee", ended=True), Claim("drink", "green tea")]
    assert current_claims("Actually I've given up coffee, I now drink green tea")["drink"].value == "green tea"


def test_another_value_of_the_same_slot_replaces_the_earlier_one():
    assert replaced_by("I drink a flat white every morning.", "I now drink green tea.") == [Claim("drink", "green tea")]
    assert replaced_by("I live in Porto.", "We relocated to Leeds!") == [Claim("home", "leeds")]
    assert replaced_by("My trip to Lisbon is on 3 May.", "My trip to Lisbon was moved to 14 May.")


def test_the_same_value_said_again_or_another_slot_replaces_nothing():
    assert replaced_by("I drink a flat white every morning.", "I drink a flat white, always.") == []
    assert replaced_by("I live in Porto.", "I work at Arcadis.") == []
    assert replaced_by("My trip to Lisbon is on 3 May.", "My trip to Kyoto is on 9 May.") == []
    assert replaced_by("I drink coffee every morning.", "I drink black coffee every morning.") == []


def test_an_ending_replaces_only_the_value_it_ends():
    assert replaced_by("I drink coffee every morning.", "I've given up coffee.")
    assert replaced_by("I drink green tea every morning.", "I've given up coffee.") == []


def test_values_compare_as_whole_words_without_articles_and_case():
    assert same_value("a Flat White", "flat white")
    assert same_value("Leeds", "Leeds city centre")
    assert not same_value("tea", "steak")


def test_a_facts_slot_is_its_last_claim():
    assert first_slot("The user moved to Leeds.") == "home"
    assert first_slot("The user likes hiking.") == ""


def test_a_rule_is_skipped_only_when_no_text_it_could_match_holds_its_words(monkeypatch):
    texts = [text for text, _, _ in STATEMENTS] + [
        "I drink teaching notes", "MY HOUSE IN PORTO is lovely", "I now drink a ﬂat white", "my dog is called Rex",
        "I'VE STARTED WORK AT ACME.", "we leave for Oslo on 3/4", "I have given up coffee", "Call me Ishmael.",
    ]  # fmt: skip
    with_triggers = [validity._claims_of.__wrapped__(text) for text in texts]
    every_rule = {**validity.TRIGGER_PATTERNS, "": re.compile("")}
    monkeypatch.setattr(validity, "TRIGGER_PATTERNS", every_rule)
    monkeypatch.setattr(validity, "RULES", tuple(dataclasses.replace(rule, family="") for rule in validity.RULES))
    assert [validity._claims_of.__wrapped__(text) for text in texts] == with_triggers


def test_a_hostile_input_is_read_in_linear_time():
    hostile = "I live in " + "A" * 50_000 + " and I drink " + "very " * 10_000 + "x"
    shapes = ["I ", "I live in ", "Aa ", "Aa-", "A. ", "I have a ", "we moved to ", "the Aa trip ", "Aa, departing "]
    started = time.perf_counter()
    claims(hostile)
    claims("My trip to " + "Aa-" * 20_000)
    for shape in shapes:
        claims(shape * (8000 // len(shape)))
    # only the first SCANNED_CHARS are read, and every pattern is linear: far under a second even on a busy machine
    assert time.perf_counter() - started < 2.0


def test_claims_read_ahead_are_remembered_when_retrieval_compares_what_it_found():
    said = [
        validity.Said(("page", 1), "I live in Lisbon.", datetime(2026, 1, 1, tzinfo=UTC)),
        validity.Said(("page", 2), "I moved to Porto last week.", datetime(2026, 3, 1, tzinfo=UTC)),
    ]
    validity._claims_of.cache_clear()
    validity.claims_read_ahead(item.text for item in said)
    parsed = validity._claims_of.cache_info().misses
    assert validity.replacements(said)[("page", 1)].by == ("page", 2)
    assert validity._claims_of.cache_info().misses == parsed, "nothing parsed again"
