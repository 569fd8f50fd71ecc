"""Long turns are memory too, on every interface: a 50,000-character reply is stored through the chat, the REST API,
the memory proxy, MCP and a bundle import, and a question about a sentence near its end finds that page through its
passages; 64,001 characters are refused with an error that says so, and nothing is stored."""

from __future__ import annotations

import dataclasses
import json

import anyio
import pytest
from django.test import Client
from mcp.server.mcpserver.exceptions import ToolError

from integrations.mcp_server import build_server, django_threads
from memory.bundles import BundleInvalid
from memory.embeddings import use_embedder
from memory.llm import use_llm
from memory.models import ChatReply, EndUser, Page, PagePassage
from memory.retrieval.config import DEFAULT
from memory.retrieval.result import ScoredPage
from memory.retrieval.search import retrieve
from memory.selectors.gdpr import user_export_data
from memory.services.audit import Actor
from memory.services.bundle_import import memory_import
from memory.services.tenancy import end_user_create
from memory.text import PASSAGE_CHARS, passage_span_at
from tests import builders
from tests.api.conftest import client_for, make_token
from tests.fakes import HashingEmbedder, ScriptedLLM

VECTOR_ONLY = dataclasses.replace(DEFAULT, lexical=False, time=False, neighbours=False)
ENDING = (
    "Metrics exporter port: our exporter listens on port 9464. Which port to open in our firewall? Port 9464, "
    "for the metrics exporter behind our firewall, and only that port."
)
QUESTION = "Which port does our metrics exporter listen on behind our firewall?"
LONG = builders.long_reply(chars=50_000, ending=ENDING)
TOO_LONG = "x" * 64_001
ASKED = "How do I ship the release?"


@pytest.fixture(autouse=True)
def embedder():
    """An embedder that, like MiniLM, reads only the start of a text (about its first 256 word pieces)."""
    with use_embedder(HashingEmbedder(reads_chars=PASSAGE_CHARS)) as fake:
        yield fake


@pytest.fixture
def model(settings):
    """A configured model that answers with the long reply."""
    settings.LLM_BASE_URL = "http://llm.test/v1"
    with use_llm(ScriptedLLM([LONG])) as scripted:
        yield scripted


@pytest.fixture
def token(tenant) -> str:
    return make_token(tenant)


def found_by_its_end(end_user: EndUser, capture, settings) -> ScoredPage:
    """The best page for a question about the long reply's end, once later turns pushed it out of short-term memory
    (placed offline) and only the vector channel ranks pages."""
    settings.LLM_BASE_URL = ""
    space = builders.space_of(end_user)
    builders.segment_with_pages(space, summary="metrics dashboards", messages=["I like metrics dashboards at home."])
    builders.stm_push_out(space, capture)
    return retrieve(space=space, query=QUESTION, config=VECTOR_ONLY, record_visits=False).pages[0]


def assert_found_through_its_last_passage(scored: ScoredPage) -> None:
    page = scored.page
    assert page.assistant_reply == LONG and PagePassage.objects.filter(page=page).count() > 40
    start, end = passage_span_at(page.memory_text, scored.found_by["passage"])
    assert ENDING in page.memory_text[start:end]


def test_a_long_reply_in_the_chat_is_stored_and_found_by_its_end(
    client, alice, model, settings, django_capture_on_commit_callbacks
):
    client.force_login(alice.account)

    response = client.post("/chat/ava/send/", {"message": ASKED, "idempotency_key": "k-1"})

    assert response.status_code in (200, 302, 303)
    assert Page.objects.get(user_message=ASKED).assistant_reply == LONG
    assert_found_through_its_last_passage(found_by_its_end(alice, django_capture_on_commit_callbacks, settings))


def test_a_long_turn_through_the_rest_api_is_stored_and_found_by_its_end(
    alice, token, settings, django_capture_on_commit_callbacks
):
    body = {"user": "alice", "assistant": "ava", "user_message": ASKED, "assistant_reply": LONG}

    response = client_for(token).post("/api/v1/turns/", body, format="json")

    assert response.status_code == 201
    assert_found_through_its_last_passage(found_by_its_end(alice, django_capture_on_commit_callbacks, settings))


def proxy_post(token: str, text: str):
    body = json.dumps({"model": "any", "user": "alice", "messages": [{"role": "user", "content": text}]})
    return Client().post(
        "/v1/chat/completions",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_X_MEMORYOS_ASSISTANT="ava",
    )


def test_a_long_reply_through_the_proxy_is_stored_and_found_by_its_end(
    alice, token, model, settings, django_capture_on_commit_callbacks
):
    response = proxy_post(token, ASKED)

    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == LONG
    assert_found_through_its_last_passage(found_by_its_end(alice, django_capture_on_commit_callbacks, settings))


@pytest.fixture
def mcp_threads_close_connections(transactional_db):
    """The server runs a tool on one of its own threads, which opens its own database connection (so the test
    commits what the tool must see): they are closed after the test, so none outlives it."""
    yield
    django_threads.close()


def mcp_record_turn(token: str, **arguments):
    """The MCP server's `memory_record_turn` tool, called as a client's request would call it."""
    server = build_server(token=token)
    return anyio.run(server.call_tool, "memory_record_turn", {"user": "alice", "user_message": ASKED} | arguments)


def test_a_long_turn_through_mcp_is_stored_and_found_by_its_end(
    mcp_threads_close_connections, alice, token, settings, django_capture_on_commit_callbacks
):
    mcp_record_turn(token, assistant_reply=LONG)

    assert_found_through_its_last_passage(found_by_its_end(alice, django_capture_on_commit_callbacks, settings))


def test_a_long_page_in_a_bundle_is_imported_with_its_passages_and_found_by_its_end(
    alice, tenant, settings, django_capture_on_commit_callbacks
):
    found_by_its_end(alice, django_capture_on_commit_callbacks, settings)  # placed: there is nothing to find yet
    builders.turn(builders.space_of(alice), user_message=ASKED, assistant_reply=LONG)
    builders.stm_push_out(builders.space_of(alice), django_capture_on_commit_callbacks, prefix="Again, noted")
    bundle = json.loads(json.dumps(user_export_data(end_user=alice)))
    carol = end_user_create(tenant=tenant, external_id="carol")

    memory_import(end_user=carol, bundle=bundle, actor=Actor.system("test"))

    space = builders.space_of(carol)
    scored = retrieve(space=space, query=QUESTION, config=VECTOR_ONLY, record_visits=False).pages[0]
    assert scored.page.space == space
    assert_found_through_its_last_passage(scored)


# --- 64,001 characters ----------------------------------------------------------------------------------------------


def assert_nothing_stored() -> None:
    assert not Page.objects.exists() and not ChatReply.objects.exists()
    assert not EndUser.objects.filter(external_id="carol").exists()


def test_the_chat_refuses_a_message_past_the_limit_in_words(client, alice, model):
    client.force_login(alice.account)

    response = client.post("/chat/ava/send/", {"message": TOO_LONG, "idempotency_key": "k-1"})

    assert response.status_code == 400
    assert "Your message is 64,001 characters long; the limit is 64,000." in response.content.decode()
    assert_nothing_stored()


def test_the_rest_api_refuses_a_reply_past_the_limit_naming_the_field(tenant, token):
    body = {"user": "carol", "assistant": "ava", "user_message": ASKED, "assistant_reply": TOO_LONG}

    response = client_for(token).post("/api/v1/turns/", body, format="json")

    assert response.status_code == 400
    assert "64000" in json.dumps(response.json()["error"]["fields"]["assistant_reply"])
    assert_nothing_stored()


def test_the_proxy_refuses_a_message_past_the_limit_in_openais_error_shape(tenant, token, model):
    response = proxy_post(token, TOO_LONG).json()

    assert response["error"] == {
        "message": "Your message is 64,001 characters long; the limit is 64,000.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "string_above_max_length",
    }
    assert model.calls == []
    assert_nothing_stored()


def test_mcp_refuses_a_reply_past_the_limit_as_a_tool_error(mcp_threads_close_connections, tenant, token):
    with pytest.raises(ToolError, match="assistant_reply is longer than 64000 characters"):
        mcp_record_turn(token, user="carol", assistant_reply=TOO_LONG)

    assert_nothing_stored()


def test_a_bundle_with_a_reply_past_the_limit_is_refused_naming_the_page(alice, tenant):
    builders.turn(builders.space_of(alice), user_message=ASKED, assistant_reply="Short for now.")
    bundle = json.loads(json.dumps(user_export_data(end_user=alice)))
    bundle["memory"][0]["pages"][0]["assistant_reply"] = TOO_LONG
    carol = end_user_create(tenant=tenant, external_id="carol")

    with pytest.raises(BundleInvalid, match="longer than 64000 characters") as refused:
        memory_import(end_user=carol, bundle=bundle, actor=Actor.system("test"))

    assert refused.value.path.endswith("pages[0].assistant_reply")
    assert not Page.objects.filter(space__end_user=carol).exists()
