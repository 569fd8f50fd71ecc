"""The MCP server over stdio, driven by the SDK's own client: `manage.py mcp_serve` spawned as a real process on
the test database, with its token in MEMORYOS_API_TOKEN."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from memory.models import ActorKind, AuditEntry, Page
from tests.foundation.processes import child_env, database_url_for_children, manage
from tests.integrations.conftest import server_env
from tests.integrations.mcp_clients import call, read, run, stdio_session

pytestmark = [pytest.mark.slow, pytest.mark.process]  # the MCP server runs as a process

TOOLS = {"memory_retrieve", "memory_record_turn", "memory_chat", "profile_get", "memory_search", "memory_forget"}


def stdio_env(fake_model_url: str, token: str) -> dict[str, str]:
    return child_env(DATABASE_URL=database_url_for_children(), MEMORYOS_API_TOKEN=token, **server_env(fake_model_url))


def test_every_tool_and_resource_answers_over_stdio_and_is_audited_as_the_token(
    transactional_db, memory, token, fake_model_url
):
    async def scenario():
        async with stdio_session(stdio_env(fake_model_url, token)) as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
            retrieved = await call(session, "memory_retrieve", user="alice", query="What is my beagle called?")
            turn = {"user": "alice", "user_message": "I also have a cat.", "assistant_reply": "Nice!"}
            recorded = await call(session, "memory_record_turn", **turn, idempotency_key="turn-1")
            retried = await call(session, "memory_record_turn", **turn, idempotency_key="turn-1")
            reused = await call(
                session, "memory_record_turn", **{**turn, "user_message": "A dog."}, idempotency_key="turn-1"
            )
            chatted = await call(session, "memory_chat", user="alice", message="What is my dog called?")
            profile = await call(session, "profile_get", user="alice")
            found = await call(session, "memory_search", user="alice", query="beagle")
            knowledge = await read(session, "memoryos://users/alice/knowledge")
            profile_resource = await read(session, "memoryos://users/alice/profile")
            assert retried == recorded and reused == (
                True,
                "This Idempotency-Key was already used with a different body.",
            )
            return listed, retrieved, recorded, chatted, profile, found, knowledge, profile_resource

    listed, retrieved, recorded, chatted, profile, found, knowledge, profile_resource = run(scenario)

    assert listed >= TOOLS
    assert retrieved[0] is False
    assert memory.mtm_page.pk in [page["id"] for page in retrieved[1]["pages"]]
    assert all(page["at"] for page in retrieved[1]["pages"])
    assert recorded[0] is False and Page.objects.filter(user_message="I also have a cat.").count() == 1
    assert chatted[0] is False and chatted[1]["mode"] == "offline" and chatted[1]["page_id"]
    assert profile == (False, profile[1]) and profile[1]["text"] == "Alice owns a beagle."
    assert [page["id"] for page in found[1]["pages"]] == [memory.mtm_page.pk]
    assert [entry["id"] for entry in found[1]["knowledge"]] == [memory.knowledge.pk]
    assert [entry["text"] for entry in knowledge["knowledge"]] == ["Alice has a beagle called Biscuit."]
    assert profile_resource["text"] == "Alice owns a beagle."
    actors = set(AuditEntry.objects.filter(end_user__external_id="alice").values_list("actor_kind", "action"))
    assert {(ActorKind.API_TOKEN, "memory.read"), (ActorKind.API_TOKEN, "reply.memory_injected")} <= actors


def test_another_tenants_token_reaches_nothing_over_stdio(transactional_db, memory, stranger_token, fake_model_url):
    async def scenario():
        async with stdio_session(stdio_env(fake_model_url, stranger_token)) as session:
            answers = [
                await call(session, "memory_retrieve", user="alice", query="beagle"),
                await call(session, "profile_get", user="alice"),
                await call(session, "memory_search", user="alice", query="beagle"),
                await call(session, "memory_forget", kind="page", id=memory.mtm_page.pk, reason="not theirs"),
            ]
            with pytest.raises(MCPError, match="No such user"):
                await read(session, "memoryos://users/alice/knowledge")
            return answers

    answers = run(scenario)

    assert answers == [
        (True, "No such user."),
        (True, "No such user."),
        (True, "No such user."),
        (True, "No such page."),
    ]
    assert Page.objects.filter(pk=memory.mtm_page.pk).exists()


def test_the_stdio_server_refuses_to_start_without_a_valid_token(transactional_db, fake_model_url):
    result = manage("mcp_serve", env=stdio_env(fake_model_url, "mos_nothing_here"))

    assert result.returncode != 0
    assert "MEMORYOS_API_TOKEN must hold a valid API token" in result.stderr
