"""Rejected facts never reach a prompt, on any path: the chat reply, the OpenAI-compatible proxy, the MCP retrieve
tool and the REST retrieve (with its prompt). The user's memory holds the rejected facts, profile versions that stated
them and the turns they were learnt from, in mid-term memory (placed) and withheld by the rejection.

The facts and the profile are kept out by review (this branch); the withheld turns are kept out by retrieval skipping
withheld pages, which lands separately: until it does, the turn checks skip, saying so."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from api.access import Principal
from chat.services import reply_generate
from integrations import tools
from integrations.access import principal_for_token
from memory.models import KnowledgeEntry, Page, ReviewState
from memory.services.audit import Actor
from memory.services.review import knowledge_review, profile_version_review
from memory.steps.offline_steps import PROFILE_HEADER
from tests import builders
from tests.api.conftest import client_for, make_token

REVIEWER = Actor.system("test-reviewer")
FACTS = ["Alice sees a therapist about her anxiety.", "Alice was diagnosed with diabetes in May."]
TURNS = ["I see a therapist about my anxiety every Monday.", "The doctor diagnosed me with diabetes in May."]
QUESTION = "Do I see a therapist about my anxiety, and was I diagnosed with diabetes?"


def held(item):
    type(item).objects.filter(pk=item.pk).update(review_state=ReviewState.PENDING)
    item.refresh_from_db()
    return item


@pytest.fixture
def rejected(space, alice):
    """Two rejected facts learnt from two placed turns, a current profile and a pending version that stated them
    (the pending one approved after the rejections)."""
    segment = builders.segment(space, summary="health therapist anxiety diabetes")
    pages = [builders.page(space, user_message=turn, segment=segment) for turn in TURNS]
    facts = [held(builders.knowledge(alice, text=f, source_pages=[p])) for f, p in zip(FACTS, pages, strict=True)]
    builders.profile(alice, text="\n".join([PROFILE_HEADER, "- Alice likes tea.", f"- {FACTS[0]}"]))
    stating = "\n".join([PROFILE_HEADER, "- Alice likes tea.", *(f"- {fact}" for fact in FACTS)])
    pending = held(builders.profile(alice, text=stating))
    for fact in facts:
        knowledge_review(entry=fact, decision="reject", actor=REVIEWER, reason="health data")
    profile_version_review(version=pending, decision="approve", actor=REVIEWER)
    assert set(KnowledgeEntry.objects.values_list("review_state", flat=True)) == {ReviewState.REJECTED}
    assert Page.objects.filter(pk__in=[p.pk for p in pages], withheld=True).count() == 2
    return facts


def assert_nothing_rejected_in(prompt: str) -> None:
    folded = " ".join(prompt.casefold().split())
    for fact in FACTS:
        assert fact.casefold() not in folded
    assert "alice likes tea." in folded  # the profile did reach it, without the rejected lines
    assert not [turn for turn in TURNS if turn.casefold() in folded]  # nor the turns that stated them


@pytest.fixture
def token(tenant) -> str:
    return make_token(tenant)


def test_the_chat_reply_prompt_holds_no_rejected_fact(llm, alice, assistant, rejected):
    fake = llm("I cannot say.")

    reply_generate(end_user=alice, assistant=assistant, message=QUESTION, idempotency_key="k-1")

    assert_nothing_rejected_in(fake.calls[0][0]["content"])


def test_the_proxy_sends_the_model_no_rejected_fact(llm, rejected, token):
    fake = llm("I cannot say.")
    body = {"model": "any", "user": "alice", "messages": [{"role": "user", "content": QUESTION}]}

    response = Client().post("/v1/chat/completions", json.dumps(body), content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip

    assert response.status_code == 200, response.content
    assert_nothing_rejected_in(fake.calls[0][0]["content"])


def test_the_mcp_retrieve_tool_answers_no_rejected_fact(rejected, token):
    caller: Principal = principal_for_token(token, scope="read")

    answer = tools.memory_retrieve_tool(caller, user="alice", query=QUESTION, record_visits=False)

    assert_nothing_rejected_in(json.dumps(answer, ensure_ascii=False))


def test_the_rest_retrieve_and_its_prompt_hold_no_rejected_fact(rejected, token):
    body = {"user": "alice", "assistant": "ava", "query": QUESTION, "include_prompt": True, "record_visits": False}

    response = client_for(token).post("/api/v1/retrieve/", body, format="json")

    assert response.status_code == 200, response.content
    assert_nothing_rejected_in(response.json()["prompt"])
    assert_nothing_rejected_in(json.dumps(response.json(), ensure_ascii=False))
