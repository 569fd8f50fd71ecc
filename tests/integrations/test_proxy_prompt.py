"""What the memory proxy sends the model and what it costs, checked in-process with the scripted LLM at the seam."""

from __future__ import annotations

import json

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections
from django.test import Client

from memory.llm import LLMError, use_llm
from memory.models import ChatReply, Page, ReplyStatus
from tests.fakes import ScriptedLLM
from tests.integrations.conftest import make_token

URL = "/v1/chat/completions"


@pytest.fixture
def llm(settings):
    settings.LLM_BASE_URL = "http://model.invalid/v1"  # configured: replies come from the (scripted) model
    scripted = ScriptedLLM(["Your beagle is called Biscuit."])
    with use_llm(scripted):
        yield scripted


def post(token: str, body: dict, **headers) -> object:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", **headers}
    return Client().post(URL, json.dumps(body), content_type="application/json", **headers)


CONVERSATION = {
    "model": "any",
    "user": "alice",
    "messages": [
        {"role": "system", "content": "You are the support bot of Acme. Be brief."},
        {"role": "user", "content": "Hello!"},
        {"role": "assistant", "content": "Hi, how can I help?"},
        {"role": "user", "content": [{"type": "text", "text": "What is my beagle called?"}]},
    ],
}


def test_the_model_gets_the_memory_block_then_the_callers_instructions_and_conversation(llm, memory, token):
    response = post(token, CONVERSATION)

    assert response.status_code == 200, response.content
    system, *rest = llm.calls[0]
    assert system["role"] == "system"
    memory_block = system["content"].split("\n<memory>\n", 1)[1].split("\n</memory>", 1)[0]
    assert "Alice has a beagle called Biscuit." in memory_block
    assert system["content"].endswith("You are the support bot of Acme. Be brief.")
    assert rest == [
        {"role": "user", "content": "Hello!"},
        {"role": "assistant", "content": "Hi, how can I help?"},
        {"role": "user", "content": "What is my beagle called?"},
    ]
    page = Page.objects.get(user_message="What is my beagle called?")
    assert page.assistant_reply == "Your beagle is called Biscuit."


def test_a_retry_with_the_same_idempotency_key_answers_the_first_reply_and_stores_one_turn(llm, memory, token):
    first = post(token, CONVERSATION, HTTP_IDEMPOTENCY_KEY="proxy-0001").json()
    second = post(token, CONVERSATION, HTTP_IDEMPOTENCY_KEY="proxy-0001").json()

    assert second["choices"][0]["message"]["content"] == first["choices"][0]["message"]["content"]
    assert Page.objects.filter(user_message="What is my beagle called?").count() == 1
    assert len(llm.calls) == 1


def test_a_model_failure_is_a_502_in_openais_shape_and_stores_nothing(settings, memory, token):
    settings.LLM_BASE_URL = "http://model.invalid/v1"
    with use_llm(ScriptedLLM([LLMError("the LLM timed out", retryable=True)])):
        response = post(token, CONVERSATION)

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "generation_failed"
    assert ChatReply.objects.get().status == ReplyStatus.FAILED
    assert not Page.objects.filter(user_message="What is my beagle called?").exists()


def test_a_model_failure_mid_stream_ends_the_stream_with_an_error_event_and_stores_nothing(settings, memory, token):
    settings.LLM_BASE_URL = "http://model.invalid/v1"
    with use_llm(ScriptedLLM([LLMError("the LLM could not be reached", retryable=True)])):
        response = post(token, {**CONVERSATION, "stream": True})
        events = b"".join(response.streaming_content).decode()

    assert response.status_code == 200
    assert '"code": "generation_failed"' in events and "[DONE]" not in events
    assert ChatReply.objects.get().status == ReplyStatus.FAILED
    assert not Page.objects.filter(user_message="What is my beagle called?").exists()


def test_the_participants_names_reach_the_model_with_their_messages(llm, memory, token):
    body = {
        "user": "alice",
        "messages": [
            {"role": "system", "content": "Two people share this chat.", "name": "ops"},
            {"role": "user", "content": "Hello!", "name": "bob"},
            {"role": "assistant", "content": "Hi Bob.", "name": "helper"},
            {"role": "user", "content": "What is my beagle called?", "name": "alice"},
        ],
    }

    response = post(token, body)

    assert response.status_code == 200, response.content
    system, *rest = llm.calls[0]
    assert rest == [
        {"role": "user", "content": "Hello!", "name": "bob"},
        {"role": "assistant", "content": "Hi Bob.", "name": "helper"},
        {"role": "user", "content": "What is my beagle called?", "name": "alice"},
    ]
    assert "name" not in system


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"user": "alice", "messages": [{"role": "user", "content": "Hi", "name": 7}]}, "messages.0.name"),
        ({"user": "alice", "messages": [{"role": "user", "content": "Hi", "name": " "}]}, "messages.0.name"),
        ({"user": "alice", "messages": [{"role": "user", "content": "Hi", "name": "x" * 65}]}, "messages.0.name"),
        ({"messages": [{"role": "user", "content": "Hi"}]}, "user"),
        ({"user": "alice", "messages": []}, "messages"),
        ({"user": "alice", "messages": [{"role": "function", "content": "x"}]}, "messages.0.role"),
        ({"user": "alice", "messages": [{"role": "tool", "content": "x"}]}, "messages.0.tool_call_id"),
        ({"user": "alice", "messages": [{"role": "user", "content": {"text": "Hi"}}]}, "messages.0.content"),
        ({"user": "alice", "messages": [{"role": "user", "content": "Hi"}], "stream": "yes"}, "stream"),
    ],
)
def test_a_request_not_in_openais_shape_is_refused_naming_the_field(llm, memory, token, body, param):
    response = post(token, body)

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert not ChatReply.objects.exists()


def test_a_tenant_with_several_assistants_must_name_one_in_the_header(llm, memory, tenant, token):
    from memory.services.tenancy import assistant_create

    assistant_create(tenant=tenant, external_id="max", name="Max")

    unnamed = post(token, CONVERSATION)
    named = post(token, CONVERSATION, HTTP_X_MEMORYOS_ASSISTANT="ava")

    assert unnamed.status_code == 400 and "name one" in unnamed.json()["error"]["message"]
    assert named.status_code == 200


def test_the_proxy_counts_against_the_tokens_rate_limit(settings, llm, memory, tenant):
    settings.API_RATE_LIMIT = "1/min"
    token = make_token(tenant)

    assert post(token, CONVERSATION).status_code == 200
    limited = post(token, CONVERSATION)

    assert limited.status_code == 429 and limited["Retry-After"]
    assert limited.json()["error"]["type"] == "rate_limit_error"


def test_a_completion_costs_a_bounded_number_of_queries(llm, memory, token, django_assert_max_num_queries):
    llm.replies.append("Again: Biscuit.")
    post(token, CONVERSATION)  # warm: the token's last_used_at, the embedding state

    # the chat's own loop: authentication (1), the parties with their space and policy (1: four before), the claim,
    # retrieval, the turn, the reply and its audit
    with django_assert_max_num_queries(18):
        assert post(token, {**CONVERSATION, "messages": CONVERSATION["messages"][-1:]}).status_code == 200


def test_a_stream_closed_before_its_first_event_is_abandoned_and_stores_nothing(llm, memory, token):
    response = post(token, {**CONVERSATION, "stream": True})

    # What the server does when the client has gone before anything was written. As Django's test client does,
    # keep request_finished from closing the test's connection (it holds the test's transaction).
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)

    reply = ChatReply.objects.get()
    assert reply.status == ReplyStatus.FAILED and "disconnected" in reply.error
    assert not Page.objects.filter(user_message="What is my beagle called?").exists()
    assert llm.calls == []  # the model was never asked


def test_a_deactivated_user_is_refused_with_a_conflict_and_nothing_is_asked(llm, memory, alice, token):
    from memory.services.audit import Actor
    from memory.services.tenancy import end_user_set_active

    end_user_set_active(end_user=alice, active=False, actor=Actor.system("test"), reason="left")

    response = post(token, CONVERSATION)

    assert response.status_code == 409 and response.json()["error"]["code"] == "deactivated"
    assert llm.calls == [] and not ChatReply.objects.exists()


def test_a_streamed_retry_with_the_same_key_streams_the_stored_reply_again(llm, memory, token):
    body = {**CONVERSATION, "stream": True}
    first = b"".join(post(token, body, HTTP_IDEMPOTENCY_KEY="stream-0001").streaming_content).decode()
    again = b"".join(post(token, body, HTTP_IDEMPOTENCY_KEY="stream-0001").streaming_content).decode()

    assert "Biscuit" in first and "[DONE]" in first
    assert "Your beagle is called Biscuit." in again and "[DONE]" in again
    assert Page.objects.filter(user_message="What is my beagle called?").count() == 1 and len(llm.calls) == 1


def test_a_user_id_that_is_not_an_external_id_is_refused_and_nothing_is_created(llm, tenant, token):
    response = post(token, {**CONVERSATION, "user": "not an id/with spaces"})

    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"
    assert not tenant.end_users.exists() and llm.calls == []
