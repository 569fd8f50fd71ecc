"""The work behind the MCP tools, in-process: the same answers as the REST API, the same audit, bounded queries."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.access import Principal
from api.exceptions import Conflict
from integrations import tools
from integrations.access import NotAuthenticated, RateLimited, ScopeMissing, principal_for_token
from memory.models import ActorKind, AuditEntry, KnowledgeEntry, Page
from memory.services.conversation import AssistantUnnamed
from memory.services.tenancy import assistant_create
from tests import builders
from tests.api.conftest import client_for
from tests.integrations.conftest import make_token


@pytest.fixture
def caller(token) -> Principal:
    return principal_for_token(token, scope="read")


def test_memory_retrieve_answers_exactly_what_the_rest_api_answers(memory, token, caller):
    body = {"user": "alice", "assistant": "ava", "query": "What is my beagle called?", "record_visits": False}
    rest = client_for(token).post("/api/v1/retrieve/", body, format="json").json()

    answer = tools.memory_retrieve_tool(caller, user="alice", query=body["query"], record_visits=False)

    assert json.loads(json.dumps(answer)) == rest
    assert memory.mtm_page.pk in [page["id"] for page in answer["pages"]]


def test_memory_retrieve_costs_what_the_rest_api_costs(memory, token, caller):
    body = {"user": "alice", "assistant": "ava", "query": "beagle"}
    api = client_for(token)
    api.post("/api/v1/retrieve/", body, format="json")  # warm: last_used_at, the embedding state
    with CaptureQueriesContext(connection) as rest:
        api.post("/api/v1/retrieve/", body, format="json")
    with CaptureQueriesContext(connection) as tool:
        tools.memory_retrieve_tool(caller, user="alice", query="beagle")

    assert len(tool) <= len(rest) - 1  # the REST request also authenticates; the caller here is resolved already


def test_memory_search_finds_one_users_pages_and_facts_only(memory, alice, bob, assistant, caller):
    builders.page(builders.space_of(bob, assistant), user_message="My beagle is called Rex.", assistant_reply="Ok")
    builders.knowledge(bob, text="Bob has a beagle called Rex.")

    found = tools.memory_search_tool(caller, user="alice", query="beagle")

    assert [page["id"] for page in found["pages"]] == [memory.mtm_page.pk]
    assert [entry["id"] for entry in found["knowledge"]] == [memory.knowledge.pk]
    assert tools.memory_search_tool(caller, user="alice", query="zebra") == {
        "query": "zebra",
        "pages": [],
        "knowledge": [],
    }


def test_memory_search_costs_the_same_queries_for_one_match_or_many(memory, alice, assistant, caller):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            tools.memory_search_tool(caller, user="alice", query="beagle")
        return len(captured)

    queries()  # warm
    few = queries()
    space = builders.space_of(alice, assistant)
    for n in range(6):
        page = builders.page(space, user_message=f"My beagle did trick {n}.", assistant_reply="Good dog.")
        builders.knowledge(alice, text=f"Alice's beagle knows trick {n}.", source_pages=[page])

    assert queries() == few


def test_reads_through_the_tools_are_audited_as_the_token(memory, caller):
    tools.profile_get_tool(caller, user="alice", request_id="mcp-7")
    tools.knowledge_read(caller, user="alice")

    reads = AuditEntry.objects.filter(action="memory.read").order_by("seq")
    assert [(e.actor_kind, e.actor_id, e.detail["what"]) for e in reads] == [
        (ActorKind.API_TOKEN, str(caller.token.pk), "mcp profile_get"),
        (ActorKind.API_TOKEN, str(caller.token.pk), "mcp knowledge"),
    ]
    assert reads[0].request_id == "mcp-7"


def test_a_forget_dry_run_changes_nothing_and_needs_no_reason(memory, caller):
    answer = tools.memory_forget_tool(caller, kind="knowledge", id=memory.knowledge.pk, reason="", dry_run=True)

    assert answer["dry_run"] is True and answer["summary"]
    assert KnowledgeEntry.objects.filter(pk=memory.knowledge.pk).exists()


@pytest.mark.parametrize("bad_id", [0, -1, 2**63])
def test_an_impossible_item_id_is_simply_not_found(memory, caller, bad_id):
    with pytest.raises(KnowledgeEntry.DoesNotExist):
        tools.memory_forget_tool(caller, kind="knowledge", id=bad_id, reason="x")


def test_an_unknown_kind_or_an_empty_query_is_refused_in_words(memory, caller):
    with pytest.raises(tools.ToolFailure, match="kind must be one of page, segment, knowledge, profile_version"):
        tools.memory_forget_tool(caller, kind="user", id=1, reason="x")
    with pytest.raises(tools.ToolFailure, match="query is empty"):
        tools.memory_search_tool(caller, user="alice", query="  ")
    with pytest.raises(tools.ToolFailure, match="limit must be between 1 and 50"):
        tools.memory_search_tool(caller, user="alice", query="beagle", limit=500)


def test_a_tenant_with_several_assistants_names_one(memory, tenant, caller):
    assistant_create(tenant=tenant, external_id="max", name="Max")

    with pytest.raises(AssistantUnnamed):
        tools.memory_retrieve_tool(caller, user="alice", query="beagle")
    assert tools.memory_retrieve_tool(caller, user="alice", query="beagle", assistant="ava")["pages"]


def test_tokens_are_checked_for_validity_scope_and_rate(settings, tenant):
    settings.API_RATE_LIMIT = "2/min"
    reader = make_token(tenant, "read")

    with pytest.raises(NotAuthenticated):
        principal_for_token("mos_0123456789ab_wrong", scope="read")
    with pytest.raises(ScopeMissing):
        principal_for_token(reader, scope="write")
    principal_for_token(reader, scope="read")
    principal_for_token(reader, scope="read")  # a refused scope did not count, as in the REST API
    with pytest.raises(RateLimited):
        principal_for_token(reader, scope="read")


def test_a_turn_retried_with_its_idempotency_key_is_stored_once_and_another_body_is_refused(memory, token):
    writer = principal_for_token(token, scope="write")
    turn = {"user": "alice", "user_message": "I moved to Porto.", "assistant_reply": "Lovely city!"}

    first = tools.memory_record_turn_tool(writer, **turn, idempotency_key="turn-0001")
    again = tools.memory_record_turn_tool(writer, **turn, idempotency_key="turn-0001")

    assert again == first
    assert Page.objects.filter(user_message="I moved to Porto.").count() == 1
    with pytest.raises(Conflict, match="different body"):
        tools.memory_record_turn_tool(
            writer, **{**turn, "user_message": "I moved to Lyon."}, idempotency_key="turn-0001"
        )
    with pytest.raises(tools.ToolFailure, match="printable ASCII"):
        tools.memory_record_turn_tool(writer, **turn, idempotency_key="has spaces")
