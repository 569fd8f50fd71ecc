"""Text helpers: keywords and sentence splitting, without a model."""

from __future__ import annotations

from memory.text import STOPWORDS, extract_keywords, split_sentences

GREETING_TURN = "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you? Anything new?"
SUPPORT_GROUP_TURN = "I went to a LGBTQ support group yesterday and it was so powerful."
PAINTING_TURN = (
    "Thanks, Caroline! Painting's a fun way to express my feelings and get creative. "
    "It's a great way to relax after a long day."
)

# Keywords


def test_the_stopword_list_covers_function_words_and_chat_filler():
    assert len(STOPWORDS) >= 200
    for word in ("the", "and", "yeah", "gonna", "really", "thanks", "lol", "hey", "wow", "awesome", "sure", "okay"):
        assert word in STOPWORDS


def test_it_finds_the_content_words_of_a_chat_turn():
    assert extract_keywords(GREETING_TURN) == ["swamped", "work", "kid"]


def test_it_keeps_proper_nouns_as_keywords():
    keywords = extract_keywords(SUPPORT_GROUP_TURN)
    assert keywords[0] == "lgbtq"
    assert {"support", "group", "powerful"} <= set(keywords)


def test_it_ranks_a_proper_noun_above_a_common_word_said_once():
    keywords = extract_keywords("We finally booked the trip to Lisbon and the hotel looks lovely.")
    assert keywords[0] == "lisbon"


def test_it_ranks_a_repeated_word_above_words_said_once():
    keywords = extract_keywords("The garden needs work. I planted tomatoes in the garden and watered the garden.")
    assert keywords[0] == "garden"


def test_it_leaves_out_the_name_of_the_person_being_addressed():
    keywords = extract_keywords(PAINTING_TURN)
    assert "caroline" not in keywords
    assert keywords[0] == "painting"
    assert {"express", "feeling", "creative", "relax"} <= set(keywords)


def test_it_drops_chat_filler_short_tokens_and_numbers():
    assert extract_keywords("Wow yeah lol, gonna be awesome!! ok ok 2023 42 hey") == []


def test_it_singularises_regular_plurals():
    keywords = extract_keywords("Stories about agencies, kids, boxes, watches, movies and classes.")
    assert set(keywords) == {"story", "agency", "kid", "box", "watch", "movie", "class"}


def test_it_never_mangles_words_that_only_look_plural():
    keywords = extract_keywords("Caught the bus to class for the news series about Texas gas prices.", limit=20)
    assert {"bus", "class", "news", "series", "texas", "gas"} <= set(keywords)
    assert "price" in keywords


def test_it_strips_possessives():
    assert set(extract_keywords("Melanie's painting's colours")) == {"melanie", "painting", "colour"}


def test_it_gives_a_concept_the_same_keyword_form_across_texts():
    first = set(extract_keywords("My kids loved the camping trips we took."))
    second = set(extract_keywords("Taking the kid on a camping trip next month."))
    assert {"kid", "camping", "trip"} <= first & second


def test_it_keeps_hyphenated_words_together():
    assert "self-care" in extract_keywords("I'm starting to realize that self-care is really important.")


def test_it_reads_a_dropped_g_as_the_full_word():
    assert "dancing" in extract_keywords("I've been dancin' since I was a kid.")


def test_it_returns_no_keywords_for_empty_or_blank_input():
    assert extract_keywords("") == []
    assert extract_keywords("   \n\t ") == []


def test_it_extracts_keywords_from_a_short_query():
    assert extract_keywords("When did Caroline go to the LGBTQ support group?") == [
        "caroline",
        "lgbtq",
        "support",
        "group",
    ]


def test_it_respects_the_keyword_limit():
    text = "Hiking, climbing, kayaking, cycling, surfing, skiing, rowing, sailing, diving, fishing."
    assert len(extract_keywords(text)) == 8
    assert len(extract_keywords(text, limit=3)) == 3
    assert extract_keywords(text, limit=0) == []


def test_keywords_are_deterministic():
    text = "Apples, pears, plums and cherries from the orchard; the orchard also grows quinces."
    assert extract_keywords(text) == extract_keywords(text)
    assert extract_keywords(text)[0] == "orchard"


def test_it_ignores_html_markup_and_urls():
    text = '<p class="note">Our <b>sourdough</b> recipe: see https://example.com/bread?x=1 &amp; enjoy</p>'
    keywords = extract_keywords(text)
    assert keywords == ["sourdough", "recipe", "enjoy"]


def test_it_ignores_emoji():
    assert extract_keywords("🎉🎉 Finished my first marathon 🏃‍♀️ today! 🥳") == ["finished", "marathon"]
    assert extract_keywords("🎉🥳👍") == []


def test_it_ignores_the_role_labels_of_a_page():
    keywords = extract_keywords("User: Any tips for my sourdough starter?\nAssistant: Feed the starter daily.")
    assert "user" not in keywords
    assert "assistant" not in keywords
    assert keywords[0] == "starter"


def test_it_handles_a_huge_text():
    text = "I went hiking in Yosemite with my sister last summer. " * 20_000
    assert extract_keywords(text) == ["yosemite", "hiking", "sister", "summer", "went"]


# Sentences


def test_it_splits_sentences_on_terminal_punctuation_and_newlines():
    text = "I ran a race! It was hard. Want to join next time?\nSure\n\nGreat…  see you"
    assert split_sentences(text) == [
        "I ran a race!",
        "It was hard.",
        "Want to join next time?",
        "Sure",
        "Great…",
        "see you",
    ]


def test_it_does_not_split_on_abbreviations_initials_or_decimals():
    text = "Dr. Smith met J. K. Rowling at 3.5 p.m. today, e.g. at the café. Then they left."
    assert split_sentences(text) == [
        "Dr. Smith met J. K. Rowling at 3.5 p.m. today, e.g. at the café.",
        "Then they left.",
    ]


def test_it_still_splits_after_a_lone_letter_or_a_short_word():
    assert split_sentences("I got an A. So happy! Oh no. It broke.") == [
        "I got an A.",
        "So happy!",
        "Oh no.",
        "It broke.",
    ]


def test_it_keeps_closing_quotes_with_their_sentence():
    assert split_sentences('We did a piece called "Finding Freedom." It was emotional.') == [
        'We did a piece called "Finding Freedom."',
        "It was emotional.",
    ]


def test_it_drops_empty_and_punctuation_only_pieces():
    assert split_sentences("") == []
    assert split_sentences("... !!! \n ?? \n") == []
