"""Offline memory steps: extractive summaries, continuity and first-person facts, without a model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.steps.offline_steps import (
    PROFILE_HEADER,
    OfflineSteps,
    assistant_facts,
    chain_summary,
    continues,
    profile_merge,
    topic_summary,
    user_facts,
)
from memory.steps.types import ChainTopic, Facts, TurnText, Usage

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

GREETING_TURN = "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you? Anything new?"
SUPPORT_GROUP_TURN = "I went to a LGBTQ support group yesterday and it was so powerful."


def turn(user: str, assistant: str = "Okay.", at: datetime = MAY_8) -> TurnText:
    return TurnText(user_message=user, assistant_reply=assistant, at=at)


# Topic summary


def test_the_topic_is_the_content_sentence_not_the_greeting():
    assert topic_summary(GREETING_TURN) == "I'm swamped with the kids & work."


def test_the_topic_prefers_a_statement_to_a_question():
    text = (
        "Wow, that agency looks great! What made you pick it? "
        "I chose them because they help LGBTQ+ folks with adoption."
    )
    assert topic_summary(text) == "I chose them because they help LGBTQ+ folks with adoption."


def test_the_topic_of_a_whole_page_comes_from_its_most_informative_sentence():
    page = turn(
        "Hey Mel! Good to see you! How have you been?",
        "I'm training for a half marathon in Boston next spring, so I run every morning before work.",
    )
    assert topic_summary(page.text).startswith("I'm training for a half marathon in Boston")


def test_a_long_topic_is_trimmed_on_a_word_boundary():
    text = "The community garden project " + "keeps growing every single week " * 20 + "thanks to volunteers."
    summary = topic_summary(text, max_chars=60)
    assert len(summary) <= 60
    assert summary.endswith("…")
    assert text.startswith(summary[:-1])
    assert summary[-2] != " "


def test_the_topic_is_never_empty_for_non_empty_input():
    assert topic_summary("🎉🎉") == "🎉🎉"
    assert topic_summary("Hey!") == "Hey!"
    assert topic_summary("<br>") != ""
    assert topic_summary("") == ""


def test_the_topic_of_html_input_has_no_markup():
    assert (
        topic_summary("<p>We adopted a <b>rescue dog</b> named Biscuit.</p>")
        == "We adopted a rescue dog named Biscuit."
    )


# Chain summary


def test_a_chain_summary_keeps_where_the_chain_started_and_its_latest_topic():
    first = "Caroline went to an LGBTQ support group. It was powerful."
    summary = chain_summary(first, "She wants to study counseling.")
    assert summary == "Caroline went to an LGBTQ support group. She wants to study counseling."


def test_a_chain_summary_rolls_forward_without_growing():
    summary = chain_summary("", "Melanie ran a charity race.")
    for topic in ("She is prioritising self-care.", "She plays the violin.", "She is going camping."):
        summary = chain_summary(summary, topic)
    assert summary == "Melanie ran a charity race. She is going camping."


def test_a_chain_summary_does_not_repeat_the_same_sentence():
    assert chain_summary("Melanie ran a charity race.", "Melanie ran a charity race.") == "Melanie ran a charity race."
    assert chain_summary("", "Melanie ran a charity race.") == "Melanie ran a charity race."
    assert chain_summary("Melanie ran a charity race.", "") == "Melanie ran a charity race."


def test_a_chain_summary_is_capped():
    summary = chain_summary("word " * 200, "other " * 200, max_chars=300)
    assert len(summary) <= 300
    assert summary.startswith("word")
    assert "other" in summary


def test_a_chain_summary_adds_a_full_stop_between_its_two_sentences():
    assert chain_summary("They talked about painting", "Then about swimming") == (
        "They talked about painting. Then about swimming"
    )


# Continuity


def test_there_is_no_continuity_without_a_previous_page():
    assert continues(None, None, 0.35) is False


def test_continuity_holds_at_and_above_the_threshold():
    assert continues(0.35, 60, 0.35) is True
    assert continues(0.36, 60, 0.35) is True
    assert continues(0.9, None, 0.35) is True


def test_continuity_breaks_just_below_the_threshold():
    assert continues(0.349, 60, 0.35) is False


def test_continuity_breaks_across_a_three_hour_gap_however_similar():
    assert continues(0.99, timedelta(hours=3).total_seconds(), 0.35) is False


def test_continuity_holds_across_exactly_two_hours():
    assert continues(0.5, timedelta(hours=2).total_seconds(), 0.35) is True


# Facts


def test_user_facts_are_first_person_sentences_told_as_statements_about_the_user():
    facts = user_facts([turn("I ran a charity race for mental health last Saturday. It was really rewarding.")])
    assert facts == ["The user ran a charity race for mental health last Saturday."]


def test_user_facts_cover_my_and_we_statements():
    facts = user_facts([turn("My kids are so excited about summer break! We're thinking about camping next month.")])
    assert facts == [
        "The user's kids are so excited about summer break!",
        "The user and others are thinking about camping next month.",
    ]


def test_user_facts_skip_questions_and_trivial_statements():
    facts = user_facts(
        [turn("Do I need a permit for my kayak? I agree. I totally agree, Melanie. I think so too. Hey Mel!")]
    )
    assert facts == []


def test_user_facts_skip_sentences_that_are_not_about_the_user():
    assert user_facts([turn("The weather in Lisbon was sunny all week long.")]) == []


def test_user_facts_are_deduplicated_in_order_and_capped():
    pages = [turn(f"I have visited museum number {n} in Paris with my brother.") for n in range(15)]
    pages.insert(1, turn("I have visited museum number 0 in Paris with my brother."))
    facts = user_facts(pages)
    assert len(facts) == 10
    assert facts[0] == "The user has visited museum number 0 in Paris with their brother."
    assert len(set(facts)) == 10


def test_assistant_facts_are_what_the_assistant_did_or_committed_to():
    page = turn(
        "Can you help me plan my week?",
        "Sure! I'll set a reminder for your dentist appointment on Friday. "
        "I recommend starting each morning with a ten-minute walk. "
        "Let me know if you need anything else. Would you like me to add a grocery list?",
    )
    assert assistant_facts([page]) == [
        "The assistant will set a reminder for the user's dentist appointment on Friday.",
        "The assistant recommends starting each morning with a ten-minute walk.",
    ]
    assert user_facts([page]) == []


def test_greetings_small_talk_and_questions_make_no_fact():
    for said in ("Hi!", "How are you?", "thanks", "Thanks so much, that's great!", "What fruit do I like?"):
        assert user_facts([turn(said)]) == []


def test_assistant_facts_skip_memory_the_assistant_recited_back():
    page = turn(
        "I have a golden retriever called Pepper.",
        "You told me you have a golden retriever called Pepper. "
        "- 2026-11-22: The user said: 'I have a golden retriever called Pepper' "
        "I remember that your dog loves the park. "
        "You have a golden retriever called Pepper, I have not forgotten. "
        "I'll send you a list of dog-friendly beaches tomorrow.",
    )
    assert assistant_facts([page]) == ["The assistant will send the user a list of dog-friendly beaches tomorrow."]


def test_a_reply_the_system_wrote_is_no_part_of_the_turns_text_or_facts():
    page = TurnText(user_message="I like kiwis.", assistant_reply="", at=MAY_8)
    assert page.text == "User: I like kiwis."
    assert assistant_facts([page]) == []


def test_a_quote_inside_a_fact_is_kept_as_said():
    facts = user_facts([turn('My team performed a piece called "Finding Freedom" at regionals.')])
    assert facts == ['The user\'s team performed a piece called "Finding Freedom" at regionals.']


# Profile


def test_a_profile_merge_starts_a_profile_with_a_header():
    profile = profile_merge("", ['2023-05-08: The user said: "I love hiking."'])
    assert profile == f'{PROFILE_HEADER}\n- 2023-05-08: The user said: "I love hiking."'


def test_a_profile_merge_appends_new_facts_last_and_skips_known_ones():
    profile = profile_merge("", ["2023-05-08: A", "2023-05-08: B"])
    merged = profile_merge(profile, ["2023-06-01: b", "2023-06-01: C", "2023-06-01: C"])
    assert merged.splitlines() == [PROFILE_HEADER, "- 2023-05-08: A", "- 2023-05-08: B", "- 2023-06-01: C"]


def test_a_profile_merge_returns_the_profile_unchanged_when_nothing_is_new():
    profile = profile_merge("", ["2023-05-08: A"])
    assert profile_merge(profile, ["2023-05-08: A", "  "]) is profile
    assert profile_merge(profile, []) is profile
    assert profile_merge("", []) == ""


def test_a_profile_merge_drops_the_oldest_lines_past_the_cap():
    profile = profile_merge("", [f"fact {n}" for n in range(25)])
    lines = profile.splitlines()
    assert lines[0] == PROFILE_HEADER
    assert lines[1:] == [f"- fact {n}" for n in range(5, 25)]
    assert profile_merge(profile, ["fact 25"], max_lines=3).splitlines()[1:] == ["- fact 23", "- fact 24", "- fact 25"]


def test_a_profile_merge_keeps_a_profile_written_elsewhere_as_its_oldest_entry():
    merged = profile_merge("Caroline is a counselor who loves painting.", ["fact"])
    assert merged.splitlines() == [PROFILE_HEADER, "- Caroline is a counselor who loves painting.", "- fact"]


# OfflineSteps


def test_offline_steps_report_their_mode_and_no_llm_usage():
    steps = OfflineSteps()
    steps.chain_and_topic(previous=None, previous_chain_summary="", page=turn(SUPPORT_GROUP_TURN), similarity=None)
    steps.knowledge_extract(pages=[turn(SUPPORT_GROUP_TURN)])
    assert steps.mode == "offline"
    assert steps.usage == Usage()
    assert OfflineSteps().usage is not steps.usage


def test_a_first_page_starts_a_new_chain_with_its_topic():
    page = turn(SUPPORT_GROUP_TURN, "Wow, that's cool, Caroline! Did you hear any inspiring stories?")
    result = OfflineSteps().chain_and_topic(previous=None, previous_chain_summary="", page=page, similarity=None)
    assert isinstance(result, ChainTopic)
    assert result.continues is False
    assert result.topic_summary == SUPPORT_GROUP_TURN
    assert result.chain_summary == SUPPORT_GROUP_TURN
    assert 3 <= len(result.keywords) <= 8
    assert "lgbtq" in result.keywords


def test_a_similar_page_soon_after_continues_the_chain():
    previous = turn(SUPPORT_GROUP_TURN)
    page = turn(
        "The support group made me feel accepted and gave me courage to embrace myself.",
        at=MAY_8 + timedelta(minutes=5),
    )
    result = OfflineSteps().chain_and_topic(
        previous=previous, previous_chain_summary=SUPPORT_GROUP_TURN, page=page, similarity=0.6
    )
    assert result.continues is True
    assert result.chain_summary == f"{SUPPORT_GROUP_TURN} {result.topic_summary}"


def test_a_similar_page_after_a_long_gap_starts_a_new_chain():
    previous = turn(SUPPORT_GROUP_TURN)
    page = turn("The support group meets again tonight at the library.", at=MAY_8 + timedelta(hours=3))
    result = OfflineSteps().chain_and_topic(
        previous=previous, previous_chain_summary=SUPPORT_GROUP_TURN, page=page, similarity=0.9
    )
    assert result.continues is False
    assert result.chain_summary == result.topic_summary


def test_the_continuity_threshold_comes_from_settings(settings):
    settings.MEMORY_CONTINUITY_THRESHOLD = 0.8
    previous = turn(SUPPORT_GROUP_TURN)
    page = turn("The group meets again on Friday.", at=MAY_8 + timedelta(minutes=5))
    result = OfflineSteps().chain_and_topic(
        previous=previous, previous_chain_summary=SUPPORT_GROUP_TURN, page=page, similarity=0.6
    )
    assert result.continues is False


def test_a_page_with_few_content_words_gets_only_those_keywords():
    result = OfflineSteps().chain_and_topic(
        previous=None, previous_chain_summary="", page=turn("Hey Mel!", "Hi! Lovely sunset."), similarity=None
    )
    assert result.keywords == ["lovely", "sunset"]


def test_knowledge_extraction_returns_facts_about_both_sides():
    page = turn("I work as a nurse at the children's hospital.", "I'll remember that you work night shifts there.")
    facts = OfflineSteps().knowledge_extract(pages=[page])
    assert facts == Facts(
        user=["The user works as a nurse at the children's hospital."],
        assistant=["The assistant will remember that the user works night shifts there."],
    )


def test_a_profile_update_merges_the_users_statements():
    steps = OfflineSteps()
    profile = steps.profile_update(profile="", pages=[turn("I live in Lisbon with my two cats.")])
    assert profile == f"{PROFILE_HEADER}\n- The user lives in Lisbon with their two cats."
    assert steps.profile_update(profile=profile, pages=[turn("I live in Lisbon with my two cats.")]) is profile
