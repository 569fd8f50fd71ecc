"""Finding 10: a turn dated more than a day ahead (9999-01-01) is refused with a clear 400 by the API, MCP and
import: it would never age out of memory (retention removes pages by age). A day of clock skew is accepted."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from integrations import tools
from integrations.access import principal_for_token
from integrations.errors import problem_of
from memory.bundles import BundleInvalid, bundle_validate
from memory.models import Page
from memory.services.turns import InvalidTurn
from tests import builders
from tests.api.conftest import client_for, make_token
from tests.bundles import bundle_of

FAR = "9999-01-01T00:00:00+00:00"
TURN = {"user": "alice", "assistant": "ava", "user_message": "Hello.", "assistant_reply": "Hi."}


def test_the_rest_api_refuses_a_turn_dated_in_the_far_future_naming_the_field(alice, tenant):
    response = client_for(make_token(tenant)).post("/api/v1/turns/", {**TURN, "at": FAR}, format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error" and "more than a day in the future" in error["fields"]["at"][0]
    assert not Page.objects.exists()


def test_the_rest_api_accepts_a_turn_a_few_hours_ahead_clock_skew(alice, tenant):
    at = (timezone.now() + timedelta(hours=3)).isoformat()
    response = client_for(make_token(tenant)).post("/api/v1/turns/", {**TURN, "at": at}, format="json")
    assert response.status_code == 201, response.content


def test_the_mcp_tool_refuses_it_as_an_invalid_request(alice, tenant):
    caller = principal_for_token(make_token(tenant), scope="write")
    at = timezone.now() + timedelta(days=2)
    with pytest.raises(InvalidTurn) as refused:
        tools.memory_record_turn_tool(caller, user="alice", user_message="Hello.", assistant_reply="Hi.", at=at)
    problem = problem_of(refused.value)
    assert (problem.status, problem.code) == (400, "invalid_request")
    assert "more than a day in the future" in problem.message


def test_an_import_refuses_a_bundle_with_a_page_dated_in_the_far_future_naming_where(alice, bob, tenant):
    a_turn(alice)
    bundle = bundle_of(alice)
    bundle["memory"][0]["pages"][0]["at"] = FAR
    response = client_for(make_token(tenant)).post("/api/v1/users/bob/import/", {"bundle": bundle}, format="json")
    assert response.status_code == 400, response.content
    assert "$.memory[0].pages[0].at" in str(response.json()["error"])
    assert "more than a day in the future" in str(response.json()["error"])
    assert not Page.objects.filter(space__end_user=bob).exists()


def test_the_bundle_check_names_the_page(alice):
    a_turn(alice)
    bundle = bundle_of(alice)
    bundle["memory"][0]["pages"][0]["at"] = FAR
    with pytest.raises(BundleInvalid, match=r"pages\[0\]\.at: more than a day in the future"):
        bundle_validate(bundle, now=timezone.now())


def a_turn(end_user) -> None:
    builders.turn(builders.space_of(end_user), user_message="I like tea.")
