"""First-person sentences as statements about the user or the assistant, and statements told back to the user."""

from __future__ import annotations

import pytest

from memory.statements import about_assistant, about_user, base_form, third_person, to_user


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("I have a golden retriever called Pepper.", "The user has a golden retriever called Pepper."),
        (
            "I'm severely allergic to peanuts and carry an EpiPen.",
            "The user is severely allergic to peanuts and carries an EpiPen.",
        ),
        (
            "For work I'm a product manager at a fintech startup.",
            "For work the user is a product manager at a fintech startup.",
        ),
        ("I've lived in Lisbon for ten years.", "The user has lived in Lisbon for ten years."),
        ("I'd love to visit Japan one day.", "The user would love to visit Japan one day."),
        ("I was born in Porto and I study law.", "The user was born in Porto and the user studies law."),
        (
            "I don't eat meat because my doctor told me to stop.",
            "The user doesn't eat meat because their doctor told them to stop.",
        ),
        ("My kids love the beach.", "The user's kids love the beach."),
        (
            "i really like kiwis and go to the market every week.",
            "The user really likes kiwis and goes to the market every week.",
        ),
        ("I watch birds from my balcony.", "The user watches birds from their balcony."),
        ("I do yoga and teach a class on Mondays.", "The user does yoga and teaches a class on Mondays."),
        ("I am a nurse.", "The user is a nurse."),
        ("I went to Rome last year.", "The user went to Rome last year."),
        ("I can swim a mile.", "The user can swim a mile."),
        ("That bike is mine and I fix it myself.", "That bike is the user's and the user fixes it themselves."),
    ],
)
def test_a_first_person_sentence_becomes_a_statement_about_the_user(said, statement):
    assert about_user(said) == statement


def test_we_and_our_are_the_user_and_others():
    assert about_user("We're thinking about camping next month.") == (
        "The user and others are thinking about camping next month."
    )


def test_an_assistant_commitment_becomes_a_statement_about_the_assistant():
    assert about_assistant("I'll remind you about your dentist appointment.") == (
        "The assistant will remind the user about the user's dentist appointment."
    )
    assert about_assistant("I recommend that you walk every morning.") == (
        "The assistant recommends that the user walks every morning."
    )


VERBS = [
    ("have", "has"),
    ("am", "is"),
    ("do", "does"),
    ("go", "goes"),
    ("carry", "carries"),
    ("play", "plays"),
    ("watch", "watches"),
    ("miss", "misses"),
    ("fix", "fixes"),
    ("like", "likes"),
    ("was", "was"),
    ("went", "went"),
    ("visited", "visited"),
    ("will", "will"),
    ("don't", "doesn't"),
]


@pytest.mark.parametrize(("verb", "agreeing"), VERBS)
def test_a_verb_agrees_with_a_third_person_subject_and_back(verb, agreeing):
    assert third_person(verb) == agreeing
    if verb not in ("am", "was"):
        assert base_form(agreeing) == verb


def test_a_sentence_is_told_back_to_the_user_in_the_second_person():
    assert to_user("I like kiwis.") == "You like kiwis."
    assert to_user("For work I'm a product manager.") == "For work you're a product manager."
    assert to_user("I was in Oslo with my sister.") == "You were in Oslo with your sister."
    assert to_user("The user has a dog called Pepper.") == "You have a dog called Pepper."
    assert to_user("The user's dog is called Pepper.") == "Your dog is called Pepper."
    assert to_user("The user is allergic to peanuts and carries an EpiPen.") == (
        "You are allergic to peanuts and carry an EpiPen."
    )
    assert to_user("Alice is vegetarian.") == "Alice is vegetarian."
