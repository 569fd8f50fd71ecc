"""The site's own /mcp/ endpoint, called through Django's test client with plain JSON-RPC: the bearer token at the
door, the REST API's rate limit on every tool call, Django's ALLOWED_HOSTS, and /mcp answered without a redirect.
The same endpoint behind a real server, with the SDK's client, is in test_mcp_served_by_the_site.py."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from integrations.mcp_server import django_threads
from tests.api.conftest import client_for

ACCEPT = "application/json, text/event-stream"


@pytest.fixture(autouse=True)
def threads_closed_after():
    """The tools' threads hold connections to the test database: close them before it is dropped."""
    yield
    django_threads.close()


def mcp_post(token: str | None, message: dict, *, path: str = "/mcp/", **headers: str):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return Client().post(
        path, json.dumps(message), content_type="application/json", HTTP_ACCEPT=ACCEPT, **auth, **headers
    )


def tool_call(token: str | None, tool: str, *, path: str = "/mcp/", **arguments):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return mcp_post(token, message, path=path)


def retrieved_page_ids(response) -> list[int]:
    return [page["id"] for page in response.json()["result"]["structuredContent"]["pages"]]


def test_a_tool_call_is_answered_in_one_json_body_with_the_requests_token(transactional_db, memory, token):
    response = tool_call(token, "memory_retrieve", user="alice", query="What is my beagle called?")

    assert response.status_code == 200 and response["Content-Type"].startswith("application/json")
    assert memory.mtm_page.pk in retrieved_page_ids(response)


def test_no_session_is_kept_so_any_process_can_answer_any_call(transactional_db, token):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }

    response = mcp_post(token, initialize)

    assert response.status_code == 200 and response.json()["result"]["serverInfo"]["name"] == "memoryos"
    assert "Mcp-Session-Id" not in response


def test_mcp_without_the_slash_is_answered_the_same_not_redirected(transactional_db, memory, token):
    response = tool_call(token, "memory_retrieve", path="/mcp", user="alice", query="What is my beagle called?")

    assert response.status_code == 200
    assert memory.mtm_page.pk in retrieved_page_ids(response)


def test_a_request_without_a_valid_token_is_refused_at_the_door(transactional_db):
    for headers in ({}, {"HTTP_AUTHORIZATION": "Bearer mos_abc_def"}, {"HTTP_AUTHORIZATION": "Basic eDp5"}):
        response = mcp_post(None, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, **headers)

        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_there_is_no_stream_to_open_or_session_to_end(transactional_db, token):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}", "HTTP_ACCEPT": ACCEPT}

    assert Client().get("/mcp/", **auth).status_code == 405
    assert Client().delete("/mcp/", **auth).status_code == 405


def test_a_host_outside_allowed_hosts_is_refused_and_an_allowed_one_served(transactional_db, memory, token, settings):
    settings.ALLOWED_HOSTS = ["memory.example.com"]
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    assert mcp_post(token, message, HTTP_HOST="memory.example.com").status_code == 200
    assert mcp_post(token, message, HTTP_HOST="rebound.example.net").status_code == 400


def test_tool_calls_share_the_rest_apis_rate_limit_and_a_refused_one_says_when_to_try_again(
    transactional_db, memory, token, settings
):
    settings.API_RATE_LIMIT = "2/min"

    rest = client_for(token).post(
        "/api/v1/retrieve/", {"user": "alice", "assistant": "ava", "query": "beagle"}, format="json"
    )
    allowed = tool_call(token, "memory_search", user="alice", query="beagle")
    refused = tool_call(token, "memory_search", user="alice", query="beagle")

    assert rest.status_code == 200
    assert allowed.json()["result"]["isError"] is False
    result = refused.json()["result"]
    assert result["isError"] is True
    assert re.search(
        r"Too many requests for this token; slow down\. Try again in \d+ s\.$", result["content"][0]["text"]
    )


def test_a_body_past_the_upload_limit_is_413(transactional_db, token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = tool_call(token, "memory_search", user="alice", query="beagle " * 200)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
