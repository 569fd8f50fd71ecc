"""Mask-in-prompts applies to the background updating steps as it does to the chat prompt: the model that places
pages, promotes them into the profile and facts, and re-derives a profile never reads a masked category's value."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory.llm import use_llm
from memory.models import KnowledgeEntry, Page, ProfileVersion
from memory.services.forgetting import profile_rederive
from memory.services.personal_data import MaskedSteps, steps_for_prompts
from memory.services.promotion import segment_promote
from memory.services.updating import pages_place
from memory.steps import get_steps
from tests import builders
from tests.builders import T0
from tests.fakes import ScriptedLLM

EMAIL = "ann.lee@example.co.uk"
PHONE = "07911 123456"
NOW = T0 + timedelta(days=1)
PROMOTION_ANSWER = json.dumps(
    {"profile": "Reachable by [email].", "user_facts": ["mail: [email]"], "assistant_facts": []}
)


@pytest.fixture
def llm_mode(settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"


@pytest.fixture
def tenant(space):
    builders.personal_data_policy(space.tenant, email="mask_prompts", phone="mask_console")
    return space.tenant


def everything_the_model_read(llm: ScriptedLLM) -> str:
    return "\n".join(str(message["content"]) for call in llm.calls for message in call)


def test_placement_sends_the_model_pages_and_their_chain_summary_masked(
    space, tenant, llm_mode, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        builders.turns(space, messages=[f"Write to me at {EMAIL}"] + [f"filler {i}" for i in range(7)])
    page = Page.objects.get(user_message__contains=EMAIL)
    chain = {"continues": False, "chain_summary": "Mail.", "topic_summary": "Mail.", "keywords": ["mail"]}
    llm = ScriptedLLM([json.dumps(chain)])

    with use_llm(llm):
        pages_place(page_id=page.id)

    read = everything_the_model_read(llm)
    assert len(llm.calls) == 1 and EMAIL not in read and "Write to me at [email]" in read
    assert Page.objects.get(pk=page.pk).user_message == f"Write to me at {EMAIL}"  # stored as said: it is only masked


def test_promotion_sends_the_model_the_pages_and_the_profile_it_builds_on_masked(space, tenant, llm_mode):
    builders.profile(space.end_user, text=f"Ann's address is {EMAIL}.")
    segment = builders.segment_with_pages(
        space, summary="mail", messages=[(f"My other address is {EMAIL}.", f"Noted: {EMAIL}.")], l_interaction=5
    )
    llm = ScriptedLLM([PROMOTION_ANSWER])

    with use_llm(llm):
        segment_promote(segment_id=segment.id, now=NOW)

    read = everything_the_model_read(llm)
    assert len(llm.calls) == 1 and EMAIL not in read
    assert "Ann's address is [email]." in read and "My other address is [email]." in read
    assert KnowledgeEntry.objects.get().text == "mail: [email]"


def test_a_promotion_that_asks_only_for_facts_sends_the_pages_masked(space, tenant, llm_mode):
    builders.profile(space.end_user, text="Kept as written.", locked=True)
    segment = builders.segment_with_pages(
        space, summary="mail", messages=[(f"Mail me at {EMAIL}.", "ok")], l_interaction=5
    )
    llm = ScriptedLLM([json.dumps({"user_facts": ["mail: [email]"], "assistant_facts": []})])

    with use_llm(llm):
        segment_promote(segment_id=segment.id, now=NOW)

    read = everything_the_model_read(llm)
    assert len(llm.calls) == 1 and EMAIL not in read and "Mail me at [email]." in read


def test_profile_rederivation_sends_the_model_the_facts_masked(space, tenant, llm_mode):
    builders.knowledge(space.end_user, text=f"The user's email is {EMAIL}")
    ProfileVersion.objects.create(end_user=space.end_user, number=1, text="Stale.", stale=True)
    llm = ScriptedLLM([json.dumps({"profile": "Reachable by [email]."})])

    with use_llm(llm):
        profile_rederive(end_user_id=space.end_user_id)

    read = everything_the_model_read(llm)
    assert len(llm.calls) == 1 and EMAIL not in read and "The user's email is [email]" in read


def test_categories_masked_only_in_the_console_reach_the_model_as_said(space, tenant, llm_mode):
    segment = builders.segment_with_pages(
        space, summary="call", messages=[(f"Call me on {PHONE}, or mail {EMAIL}.", "ok")], l_interaction=5
    )
    llm = ScriptedLLM([PROMOTION_ANSWER])

    with use_llm(llm):
        segment_promote(segment_id=segment.id, now=NOW)

    assert f"Call me on {PHONE}, or mail [email]." in everything_the_model_read(llm)


def test_the_model_steps_are_masked_and_the_offline_steps_left_as_they_are(space, tenant, settings):
    assert steps_for_prompts(get_steps(), tenant=tenant).mode == "offline"
    assert not isinstance(steps_for_prompts(get_steps(), tenant=tenant), MaskedSteps)

    settings.LLM_BASE_URL = "http://llm.invalid/v1"

    assert isinstance(steps_for_prompts(get_steps(), tenant=tenant), MaskedSteps)
