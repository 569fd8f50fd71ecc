"""The MCP server over streamable HTTP (`manage.py mcp_serve --http`, a real process on a free port), driven by the
SDK's own client: each request authenticated by its bearer token, nothing reachable without one or across tenants,
and no path around pause, forgetting, erasure or the audit trail."""

from __future__ import annotations

import subprocess
import sys

import anyio.to_thread
import httpx2
import pytest
from django.db import connection

from memory.models import ActorKind, ApiToken, AuditEntry, Page, Segment, SegmentVisit
from memory.services.api_tokens import api_token_revoke
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.governance import memory_pause_set
from memory.services.turns import space_get_or_create
from tests.foundation.processes import REPO, answers, child_env, database_url_for_children, free_port, stop, wait_for
from tests.integrations.conftest import make_token, server_env
from tests.integrations.mcp_clients import call, http_session, run

pytestmark = [pytest.mark.slow, pytest.mark.process]  # the MCP server runs as a process


@pytest.fixture(scope="module")
def mcp_url(django_db_setup, django_db_blocker, fake_model_url, tmp_path_factory):
    """`manage.py mcp_serve --http` on a free port, on the test database, for this module's tests."""
    with django_db_blocker.unblock():
        env = child_env(DATABASE_URL=database_url_for_children(), **server_env(fake_model_url))
    port = free_port()
    log = tmp_path_factory.mktemp("mcp") / "server.log"
    with log.open("w") as out:
        command = [sys.executable, "manage.py", "mcp_serve", "--http", "--port", str(port)]
        process = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            assert wait_for(lambda: answers("127.0.0.1", port), timeout=60), log.read_text()
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop(process)


def test_every_tool_answers_over_http_with_the_requests_bearer_token(transactional_db, memory, token, mcp_url):
    async def scenario():
        async with http_session(mcp_url, token) as session:
            return (
                await call(session, "memory_retrieve", user="alice", query="What is my beagle called?"),
                await call(session, "memory_record_turn", user="alice", user_message="I run.", assistant_reply="Ok."),
                await call(session, "memory_chat", user="alice", message="What is my dog called?"),
                await call(session, "profile_get", user="alice"),
                await call(session, "memory_search", user="alice", query="Biscuit"),
            )

    retrieved, recorded, chatted, profile, found = run(scenario)

    assert retrieved[0] is False and memory.mtm_page.pk in [page["id"] for page in retrieved[1]["pages"]]
    assert recorded[0] is False and Page.objects.filter(pk=recorded[1]["page_id"]).exists()
    assert chatted[0] is False and "Biscuit" in chatted[1]["reply"]
    assert profile[1]["text"] == "Alice owns a beagle."
    assert [page["id"] for page in found[1]["pages"]] == [memory.mtm_page.pk]
    reads = AuditEntry.objects.filter(action="memory.read", end_user__external_id="alice")
    assert set(reads.values_list("actor_kind", flat=True)) == {ActorKind.API_TOKEN}
    assert {entry.detail["what"] for entry in reads} == {"mcp memory_retrieve", "mcp profile_get", "mcp memory_search"}


def test_a_request_without_a_valid_token_is_refused_at_the_door(transactional_db, mcp_url):
    for headers in ({}, {"Authorization": "Bearer mos_abc_def"}, {"Authorization": "Basic eDp5"}):
        response = httpx2.post(mcp_url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_another_tenants_token_reaches_nothing_over_http(transactional_db, memory, stranger_token, mcp_url):
    async def scenario():
        async with http_session(mcp_url, stranger_token) as session:
            return [
                await call(session, "memory_retrieve", user="alice", query="beagle"),
                await call(session, "memory_search", user="alice", query="beagle"),
                await call(session, "memory_forget", kind="knowledge", id=memory.knowledge.pk, reason="not theirs"),
            ]

    assert run(scenario) == [(True, "No such user."), (True, "No such user."), (True, "No such knowledge entry.")]


def test_a_token_revoked_mid_session_stops_working_at_once(transactional_db, memory, tenant, mcp_url):
    secret = make_token(tenant, "read")
    stored = ApiToken.objects.get(prefix=secret.split("_")[1])

    def revoke() -> None:  # in a worker thread: its own database connection, closed after
        try:
            api_token_revoke(token=stored, actor=Actor.system("test"), reason="leaked")
        finally:
            connection.close()

    async def scenario():
        async with http_session(mcp_url, secret) as session:
            before = await call(session, "profile_get", user="alice")
            await anyio.to_thread.run_sync(revoke)
            try:
                after = await call(session, "profile_get", user="alice")
            except Exception as exc:  # the door refuses the request: the client's session fails
                after = (True, type(exc).__name__)
            return before, after

    before, after = run(scenario)

    assert before[0] is False and after[0] is True


def test_forgetting_needs_the_write_scope_and_a_reason_and_is_audited_as_the_token(
    transactional_db, memory, tenant, token, mcp_url
):
    reader = make_token(tenant, "read")

    async def scenario():
        async with http_session(mcp_url, reader) as session:
            refused = await call(session, "memory_forget", kind="page", id=memory.mtm_page.pk, reason="asked")
        async with http_session(mcp_url, token) as session:
            unreasoned = await call(session, "memory_forget", kind="page", id=memory.mtm_page.pk, reason=" ")
            forgotten = await call(session, "memory_forget", kind="page", id=memory.mtm_page.pk, reason="Alice asked")
            searched = await call(session, "memory_search", user="alice", query="Biscuit beagle")
        return refused, unreasoned, forgotten, searched

    refused, unreasoned, forgotten, searched = run(scenario)

    assert refused == (True, "This needs the 'write' scope.")
    assert unreasoned == (True, "A reason is required to forget.")
    assert forgotten[0] is False and forgotten[1]["forgotten"]
    assert not Page.objects.filter(pk=memory.mtm_page.pk).exists()
    assert searched[1]["pages"] == []
    entry = AuditEntry.objects.get(action="page.forget", target_id=memory.mtm_page.pk)
    assert (entry.actor_kind, entry.reason) == (ActorKind.API_TOKEN, "Alice asked")


def test_paused_memory_is_not_visited_and_an_erased_user_is_never_recorded_again(
    transactional_db, memory, alice, assistant, token, mcp_url
):
    space = space_get_or_create(end_user=alice, assistant=assistant)
    memory_pause_set(space=space, paused=True, actor=Actor.system("test"), reason="Alice paused")
    visits_before = Segment.objects.get(pk=memory.segment.pk).n_visit

    async def paused_scenario():
        async with http_session(mcp_url, token) as session:
            return await call(session, "memory_retrieve", user="alice", query="What is my beagle called?")

    retrieved = run(paused_scenario)

    assert retrieved[0] is False and Segment.objects.get(pk=memory.segment.pk).n_visit == visits_before
    assert not SegmentVisit.objects.exists()  # not even queued for the worker
    user_erase(end_user=alice, actor=Actor.system("test"), legal_basis="Art. 17", dry_run=False)

    async def erased_scenario():
        async with http_session(mcp_url, token) as session:
            return (
                await call(session, "memory_record_turn", user="alice", user_message="Hi", assistant_reply="Hello"),
                await call(session, "memory_chat", user="alice", message="Remember me?"),
            )

    assert run(erased_scenario) == (
        (True, "This user has been erased; nothing more is stored about them."),
        (True, "This user has been erased; nothing more is stored about them."),
    )
    assert not Page.objects.filter(space__end_user__external_id="alice").exists()
