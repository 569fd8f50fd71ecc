"""Offline replies stay in the transcript but never become memory: no topic, keyword, summary, fact or profile."""

from __future__ import annotations

from datetime import timedelta

from chat.offline_reply import ALSO_RELEVANT, NOTHING_RELEVANT, OFFLINE_LABEL
from chat.services import reply_generate
from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.models.tiers import KnowledgeKind, ReplySource
from memory.text import extract_keywords, split_sentences
from tests import builders
from tests.builders import T0

TEMPLATE_SENTENCES = [OFFLINE_LABEL, *split_sentences(NOTHING_RELEVANT), ALSO_RELEVANT]
TEMPLATE_PHRASES = [*TEMPLATE_SENTENCES, "you told me on", "I noted it on", "you said:"]

THIRTY_TURNS = [
    "I have a golden retriever called Pepper.",
    "Pepper loves chasing squirrels in the park.",
    "My cats Miso and Tofu sleep on the sofa all day.",
    "For work I'm a product manager at a fintech startup.",
    "My boss Dana keeps moving our deadlines.",
    "I'm severely allergic to peanuts and carry an EpiPen.",
    "Hi!",
    "How are you?",
    "thanks",
    "I run along the river every Sunday morning.",
    "My sister lives in Oslo with her husband.",
    "We are visiting Oslo for the winter holidays.",
    "I play the cello in a community orchestra.",
    "The orchestra rehearses on Thursday evenings.",
    "I'm reading a novel by Ursula Le Guin.",
    "What should I cook tonight?",
    "I bake sourdough bread on Saturdays.",
    "My starter is called Bubbles.",
    "I want to repaint the kitchen in spring.",
    "The kitchen walls are pale green now.",
    "I like kiwis.",
    "What fruit do I like?",
    "Where do I work?",
    "My grandmother turns ninety in March.",
    "I am planning a surprise party for her.",
    "I drive an old blue Volvo.",
    "The Volvo needs new brakes soon.",
    "I volunteer at the food bank twice a month.",
    "Do you remember my dog?",
    "I grew up in Porto near the river.",
]


def test_thirty_offline_turns_leave_no_template_text_in_memory(
    offline, settings, alice, assistant, space, django_capture_on_commit_callbacks
):
    settings.MEMORY_STM_CAPACITY = 3
    with django_capture_on_commit_callbacks(execute=True):  # placement runs as the worker would run it
        for number, message in enumerate(THIRTY_TURNS):
            reply_generate(
                end_user=alice,
                assistant=assistant,
                message=message,
                idempotency_key=f"turn-{number}",
                now=T0 + timedelta(minutes=3 * number),
            )
    builders.segments_promote(space)

    assert Page.objects.filter(space=space, reply_source=ReplySource.SYSTEM).count() == 30
    assert Segment.objects.filter(space=space).exists() and KnowledgeEntry.objects.filter(end_user=alice).exists()
    derived = [
        *Segment.objects.filter(space=space).values_list("summary", flat=True),
        *Page.objects.filter(space=space).values_list("topic_summary", flat=True),
        *Page.objects.filter(space=space).values_list("chain_summary", flat=True),
        *KnowledgeEntry.objects.filter(end_user=alice).values_list("text", flat=True),
        *ProfileVersion.objects.filter(end_user=alice).values_list("text", flat=True),
    ]
    assert [text for text in derived if any(phrase in text for phrase in TEMPLATE_PHRASES)] == []
    said = {word for message in THIRTY_TURNS for word in extract_keywords(message, limit=50)}
    template_words = set(extract_keywords(" ".join(TEMPLATE_SENTENCES), limit=50)) - said
    keywords = {
        *(k for ks in Segment.objects.filter(space=space).values_list("keywords", flat=True) for k in ks),
        *(k for ks in Page.objects.filter(space=space).values_list("keywords", flat=True) for k in ks),
    }
    assert keywords and not keywords & template_words
    assert not KnowledgeEntry.objects.filter(end_user=alice, kind=KnowledgeKind.ASSISTANT).exists()


def test_small_talk_and_questions_make_no_fact(offline, alice, assistant, space, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for number, message in enumerate(["Hi!", "How are you?", "thanks", "What fruit do I like?", "Ok, bye!"]):
            builders.turn(space, user_message=message, assistant_reply="Noted.", at=T0 + timedelta(minutes=number))
        for number in range(8):
            builders.turn(space, user_message="Hello again!", at=T0 + timedelta(minutes=10 + number))
    builders.segments_promote(space)

    assert not KnowledgeEntry.objects.filter(end_user=alice).exists()
