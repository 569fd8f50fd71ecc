"""The site itself serves MCP: the SDK's own client reaches /mcp/ of the site as `make run` serves it (runserver and
a Celery worker, no MCP port of its own) and as production does (gunicorn's workers), with the same tokens as the
REST API; a stranger gets 401, and a revoked token stops working at once."""

from __future__ import annotations

import subprocess
import sys

import anyio.to_thread
import httpx2
import pytest
from django.db import connection

from memory.models import ApiToken
from memory.services.api_tokens import api_token_revoke
from memory.services.audit import Actor
from tests.foundation.processes import REPO, answers, child_env, database_url_for_children, free_port, stop, wait_for
from tests.integrations.conftest import make_token, server_env
from tests.integrations.mcp_clients import call, http_session, run

pytestmark = [pytest.mark.slow, pytest.mark.worker]


def test_an_mcp_client_retrieves_memory_at_the_sites_own_mcp_path(transactional_db, memory, token, site_url):
    async def scenario():
        async with http_session(f"{site_url}/mcp/", token) as session:
            return await call(session, "memory_retrieve", user="alice", query="What is my beagle called?")

    failed, answer = run(scenario)

    assert not failed, answer
    assert memory.mtm_page.pk in [page["id"] for page in answer["pages"]]


def test_a_client_configured_without_the_slash_works_the_same(transactional_db, memory, token, site_url):
    async def scenario():
        async with http_session(f"{site_url}/mcp", token) as session:
            return await call(session, "profile_get", user="alice")

    failed, profile = run(scenario)

    assert not failed and profile["text"] == "Alice owns a beagle."


def test_an_invalid_token_is_answered_401(transactional_db, site_url):
    for headers in ({}, {"Authorization": "Bearer mos_abc_def"}):
        response = httpx2.post(f"{site_url}/mcp/", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_token_revoked_mid_session_stops_working_at_once(transactional_db, memory, tenant, site_url):
    secret = make_token(tenant, "read")
    stored = ApiToken.objects.get(prefix=secret.split("_")[1])

    def revoke() -> None:  # in a worker thread: its own database connection, closed after
        try:
            api_token_revoke(token=stored, actor=Actor.system("test"), reason="leaked")
        finally:
            connection.close()

    async def scenario():
        async with http_session(f"{site_url}/mcp/", secret) as session:
            before = await call(session, "profile_get", user="alice")
            await anyio.to_thread.run_sync(revoke)
            try:
                after = await call(session, "profile_get", user="alice")
            except Exception as exc:  # the door refuses the request: the client's session fails
                after = (True, type(exc).__name__)
            return before, after

    before, after = run(scenario)
    refused = httpx2.post(
        f"{site_url}/mcp/",
        headers={"Authorization": f"Bearer {secret}"},
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )

    assert before[0] is False and after[0] is True
    assert refused.status_code == 401


def test_gunicorns_workers_answer_one_session_whichever_takes_each_call(
    transactional_db, memory, token, fake_model_url, tmp_path
):
    port = free_port()
    env = child_env(DATABASE_URL=database_url_for_children(), **server_env(fake_model_url))
    command = [sys.executable, "-m", "gunicorn", "memoryos_site.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2"]
    command += ["--logger-class", "memoryos_site.access_log.GunicornLogger"]  # as docs/production.md runs it

    async def scenario():
        async with http_session(f"http://127.0.0.1:{port}/mcp/", token) as session:
            return [await call(session, "memory_search", user="alice", query="beagle") for _ in range(6)]

    with (tmp_path / "gunicorn.log").open("w") as log:
        server = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            assert wait_for(lambda: answers("127.0.0.1", port), timeout=60)
            searched = run(scenario)
        finally:
            stop(server)

    assert [failed for failed, _ in searched] == [False] * 6
    assert all(answer["pages"][0]["id"] == memory.mtm_page.pk for _, answer in searched)
