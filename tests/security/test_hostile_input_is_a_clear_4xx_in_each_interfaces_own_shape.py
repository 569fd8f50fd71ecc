"""Hostile input gets a clear 4xx in the shape of the interface it came through, never a 500 or Django's HTML page:
the OpenAI-compatible proxy (OpenAI's error shape), the REST API, the end user's memory search and the MCP tools
(their error text names what is wrong, "legal hold" included)."""

from __future__ import annotations

import json

import pytest

from integrations import tools
from integrations.access import principal_for_token
from integrations.errors import problem_of
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from tests import builders
from tests.api.conftest import make_token

PROXY = "/v1/chat/completions"


def proxy_post(client, token: str, body: bytes):
    return client.post(PROXY, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def chat_body(user: str = "alice", content: str = "hello") -> bytes:
    """A request written by hand: json.dumps would refuse a lone surrogate, which a client may still send."""
    return f'{{"user": "{user}", "messages": [{{"role": "user", "content": "{content}"}}]}}'.encode()


def openai_error(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


@pytest.fixture
def token(tenant) -> str:
    return make_token(tenant)


def test_the_proxy_answers_json_nested_100000_deep_with_a_400(client, token):
    error = openai_error(proxy_post(client, token, b"[" * 100_000 + b"]" * 100_000), 400)

    assert error["type"] == "invalid_request_error" and "nested" in error["message"]


@pytest.mark.parametrize(
    ("user", "content", "param"),
    [
        ("al\\ud800ice", "hello", "user"),
        ("al\\u0000ice", "hello", "user"),
        ("alice", "hel\\udfffo", "messages.0.content"),
        ("alice", "hel\\u0000lo", "messages.0.content"),
    ],
    ids=["surrogate in user", "NUL in user", "surrogate in content", "NUL in content"],
)
def test_the_proxy_refuses_a_lone_surrogate_or_nul_with_a_400_naming_the_field(client, token, user, content, param):
    error = openai_error(proxy_post(client, token, chat_body(user, content)), 400)

    assert error["param"] == param and error["type"] == "invalid_request_error"


def test_a_3_mb_proxy_body_is_an_openai_shaped_413(client, token):
    body = chat_body(content="a" * 3_000_000)

    error = openai_error(proxy_post(client, token, body), 413)

    assert error["code"] == "request_too_large"


def test_a_nul_in_the_end_users_memory_search_is_refused_or_finds_nothing(client, alice, assistant):
    builders.page(builders.space_of(alice, assistant), user_message="We land in Lisbon at noon.")
    client.force_login(alice.account)

    response = client.get("/chat/ava/memory/?q=%00")

    assert response.status_code in (200, 400)
    assert "Found for" not in response.content.decode()  # no search ran: the page shows the memory's lists


def test_an_import_with_a_content_length_that_is_not_a_number_is_a_400(client, token, alice):
    body = json.dumps({"bundle": {}, "dry_run": True}).encode()

    response = client.post(
        "/api/v1/users/alice/import/", data=body, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}", CONTENT_LENGTH="twelve",
    )  # fmt: skip

    assert response.status_code == 400 and response.json()["error"]["code"]


def tool_error(token: str, scope: str, work) -> str:
    """The error text the MCP server sends for a failed call: what `integrations.errors.problem_of` makes of the
    exception (`integrations.mcp_server._run`); a failure it does not know is a bug, and fails here."""
    with pytest.raises(Exception) as failed:
        work(principal_for_token(token, scope=scope))
    problem = problem_of(failed.value)
    assert problem is not None, repr(failed.value)
    return problem.message


@pytest.mark.parametrize("field", ["user", "query"])
def test_mcp_names_a_nul_in_user_or_query(token, alice, field):
    arguments = {"user": "alice", "query": "Lisbon"} | {field: "ali\x00ce"}

    for tool in (tools.memory_retrieve_tool, tools.memory_search_tool):
        message = tool_error(token, "read", lambda p, tool=tool: tool(p, **arguments))
        assert field in message and "NUL" in message


def test_mcp_says_legal_hold_when_a_forget_is_refused_for_one(token, alice, assistant):
    page = builders.page(builders.space_of(alice, assistant), user_message="We land in Lisbon at noon.")
    legal_hold_place(end_user=alice, actor=Actor.system("test"), reason="litigation")

    message = tool_error(token, "write", lambda p: tools.memory_forget_tool(p, kind="page", id=page.pk, reason="asked"))

    assert "legal hold" in message
