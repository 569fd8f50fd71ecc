"""The MCP server over HTTP runs its tools' Django work on a few threads of its own, whatever the number of calls:
parallel tool calls leave no more connections on the database than it has threads, and later calls reuse them.

Before the fix the SDK ran each synchronous tool on one of anyio's worker threads (up to 40), which end after 10 s
idle and leave their connection open until the garbage collector frees it: every burst of parallel calls after a
pause opened as many more."""

from __future__ import annotations

import subprocess
import sys
import time

import anyio
import pytest

from evaluation.fake_llm import fake_llm_server
from integrations.mcp_server import DJANGO_THREADS
from tests.foundation.processes import (
    REPO,
    answers,
    child_env,
    connections_listed,
    connections_named,
    connections_open,
    database_url_for_children,
    free_port,
    steady_count,
    stop,
    wait_for,
)
from tests.integrations.conftest import server_env
from tests.integrations.mcp_clients import call, http_session, run

CALLS = 20
ANYIO_IDLE_SECONDS = 10  # an idle anyio worker thread ends after this long


def parallel_calls(url: str, token: str) -> list[bool]:
    """CALLS sessions, each searching Alice's memory, all at once; whether each call failed."""

    async def one() -> bool:
        async with http_session(url, token) as session:
            failed, _ = await call(session, "memory_search", user="alice", query="beagle")
            return failed

    async def scenario() -> list[bool]:
        results: list[bool] = []

        async def record() -> None:
            results.append(await one())

        async with anyio.create_task_group() as group:
            for _ in range(CALLS):
                group.start_soon(record)
        return results

    return run(scenario)


@pytest.mark.slow
def test_parallel_tool_calls_leave_no_more_connections_than_the_server_has_threads(
    transactional_db, memory, token, tmp_path
):
    port = free_port()
    log = tmp_path / "server.log"
    with fake_llm_server() as model_url, log.open("w") as out:
        env = connections_named(child_env(DATABASE_URL=database_url_for_children(), **server_env(model_url)))
        command = [sys.executable, "manage.py", "mcp_serve", "--http", "--port", str(port)]
        server = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            assert wait_for(lambda: answers("127.0.0.1", port), timeout=60), log.read_text()
            url = f"http://127.0.0.1:{port}/mcp"
            before = steady_count()
            first = parallel_calls(url, token)
            base = steady_count()
            first_listed = connections_listed()
            time.sleep(ANYIO_IDLE_SECONDS + 1)  # before the fix, the next calls ran on new threads
            second = parallel_calls(url, token)
            settled = wait_for(lambda: connections_open() <= base, timeout=10)
            after, listed = connections_open(), connections_listed()
        finally:
            stop(server)

    assert not any(first + second), log.read_text()[-3000:]
    assert base - before <= DJANGO_THREADS, f"{before} before the calls, {base} after: {first_listed}"
    assert settled, f"{after} connections after the second calls, {base} after the first: {listed}"
