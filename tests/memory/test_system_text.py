"""A reply the system wrote without a model stays in the transcript and never reaches memory, with or without an LLM."""

from __future__ import annotations

import json
from datetime import timedelta

from memory.embeddings import get_embedder
from memory.llm import use_llm
from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.models.tiers import KnowledgeKind, ReplySource
from memory.services.promotion import segment_promote
from tests import builders
from tests.builders import T0
from tests.fakes import ScriptedLLM

TEMPLATE = "(Offline mode.) I have kept your message, so I can bring it up when it matters."


def test_a_system_reply_is_left_out_of_the_pages_embedding_topic_and_keywords(
    space, settings, django_capture_on_commit_callbacks
):
    settings.MEMORY_STM_CAPACITY = 1
    with django_capture_on_commit_callbacks(execute=True):
        for minute, message in enumerate(["I adopted a beagle called Biscuit.", "I bake sourdough on Sundays."]):
            builders.page(
                space, user_message=message, assistant_reply=TEMPLATE, at=T0 + timedelta(minutes=minute),
                reply_source=ReplySource.SYSTEM,
            )  # fmt: skip

    page = Page.objects.get(user_message="I adopted a beagle called Biscuit.")
    assert page.assistant_reply == TEMPLATE  # the transcript keeps it
    assert page.memory_text == "User: I adopted a beagle called Biscuit."
    assert builders.same_page_vector(page.embedding, get_embedder().embed([page.memory_text])[0])
    assert "kept" not in page.topic_summary and not {"message", "kept", "offline", "matter"} & set(page.keywords)
    assert "kept" not in Segment.objects.get(pk=page.segment_id).summary


def test_the_llm_never_reads_a_system_reply_and_learns_no_assistant_fact_from_it(space, settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"
    segment = builders.segment(space, summary="kiwis", l_interaction=9, last_touched_at=T0)
    builders.page(
        space, user_message="I like kiwis.", assistant_reply=TEMPLATE, at=T0, segment=segment,
        reply_source=ReplySource.SYSTEM,
    )  # fmt: skip
    llm = ScriptedLLM(
        [json.dumps({"profile": "Likes kiwis.", "user_facts": ["The user likes kiwis."], "assistant_facts": []})]
    )

    with use_llm(llm):
        segment_promote(segment_id=segment.id, now=T0)

    prompts = [message["content"] for call in llm.calls for message in call]
    assert any("I like kiwis." in prompt for prompt in prompts)
    assert not any("kept your message" in prompt for prompt in prompts)
    assert ProfileVersion.objects.get().text == "Likes kiwis."
    assert not KnowledgeEntry.objects.filter(kind=KnowledgeKind.ASSISTANT).exists()


def test_offline_a_system_reply_makes_no_assistant_fact_and_the_users_words_make_statements(space):
    segment = builders.segment(space, summary="dogs", l_interaction=9, last_touched_at=T0)
    builders.page(
        space, user_message="I have a golden retriever called Pepper.",
        assistant_reply="(Offline mode.) I have a golden retriever called Pepper — you told me on 22 Nov.",
        at=T0, segment=segment, reply_source=ReplySource.SYSTEM,
    )  # fmt: skip

    segment_promote(segment_id=segment.id, now=T0)

    assert list(KnowledgeEntry.objects.values_list("kind", "text")) == [
        (KnowledgeKind.USER, "The user has a golden retriever called Pepper.")
    ]
    assert "The assistant" not in ProfileVersion.objects.get().text
