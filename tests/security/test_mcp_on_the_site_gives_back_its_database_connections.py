"""The site's own /mcp/ (served as `make run` serves it: runserver and a Celery worker) runs its tools' Django work
on the same few threads as `mcp_serve --http`: parallel tool calls leave no more connections on the database than
those threads, and later calls, after anyio's idle threads would have ended, reuse them.

The request threads only wait for the answer; runserver closes whatever connection they opened when they end."""

from __future__ import annotations

import time

import pytest

from evaluation.fake_llm import fake_llm_server
from integrations.mcp_server import DJANGO_THREADS
from tests.foundation.processes import (
    connections_listed,
    connections_named,
    connections_open,
    database_url_for_children,
    site_served,
    steady_count,
    wait_for,
)
from tests.integrations.conftest import server_env
from tests.security.test_mcp_over_http_gives_back_its_database_connections import ANYIO_IDLE_SECONDS, parallel_calls

WEB = "web:"  # the application_name prefix of the web server's connections (tests.foundation.processes)


@pytest.mark.worker
@pytest.mark.slow
def test_parallel_tool_calls_at_the_sites_mcp_leave_no_more_connections_than_its_tool_threads(
    transactional_db, memory, token, tmp_path
):
    log = tmp_path / "serve.log"
    with fake_llm_server() as model_url:
        env = connections_named({"DATABASE_URL": database_url_for_children(), **server_env(model_url)})
        env["API_RATE_LIMIT"] = "100000/min"
        with site_served(env=env, var=tmp_path / "var", log=log) as site:
            url = f"{site}/mcp/"
            # the web server's connections only: the worker's pool processes connect when the visits the calls queue
            # first reach them, whenever that is
            before = steady_count(named=WEB)
            first = parallel_calls(url, token)
            base = steady_count(named=WEB)
            first_listed = connections_listed()
            time.sleep(ANYIO_IDLE_SECONDS + 1)  # had the tools run on anyio's threads, the next calls would open more
            second = parallel_calls(url, token)
            settled = wait_for(lambda: connections_open(named=WEB) <= base, timeout=10)
            after, listed = connections_open(named=WEB), connections_listed()

    assert not any(first + second), log.read_text()[-3000:]
    assert base - before <= DJANGO_THREADS, f"{before} before the calls, {base} after: {first_listed}"
    assert settled, f"{after} connections after the second calls, {base} after the first: {listed}"
