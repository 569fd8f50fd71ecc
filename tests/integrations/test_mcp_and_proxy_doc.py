"""docs/integrating.md's "From an MCP client" and "Through the OpenAI-compatible memory proxy" examples, run as written:
the client configuration and commands start real servers, and the Python snippets run as their own processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.fake_llm import TOOL_ANSWERED
from memory.models import Page
from tests.foundation.processes import REPO, answers, child_env, database_url_for_children, free_port, stop, wait_for
from tests.integrations.conftest import server_env
from tests.integrations.mcp_clients import call, run, stdio_session

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrating.md"
PYTHON = ".venv/bin/python"

pytestmark = [pytest.mark.slow, pytest.mark.process]  # the examples start the MCP server and the site


def blocks(heading: str, language: str) -> list[str]:
    """The code blocks in `language` under the page's `## heading`, in order."""
    section = PAGE.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def run_snippet(code: str, **env: str) -> str:
    """A snippet of the page run by this interpreter in a process of its own; its output."""
    result = subprocess.run(
        [sys.executable, "-c", code], env=child_env(**env), capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_sections_have_the_promised_examples():
    assert len(blocks("From an MCP client", "json")) == 1
    assert len(blocks("From an MCP client", "sh")) == 1 and len(blocks("From an MCP client", "python")) == 1
    assert len(blocks("Through the OpenAI-compatible memory proxy", "python")) == 3


def test_the_mcp_client_configuration_starts_a_working_stdio_server(transactional_db, memory, token, fake_model_url):
    server = json.loads(blocks("From an MCP client", "json")[0])["mcpServers"]["memoryos"]
    assert server["command"] == PYTHON and set(server["env"]) == {"MEMORYOS_API_TOKEN"}
    env = child_env(DATABASE_URL=database_url_for_children(), **server_env(fake_model_url), MEMORYOS_API_TOKEN=token)

    async def scenario():
        async with stdio_session(env, args=server["args"]) as session:
            return await call(session, "memory_retrieve", user="alice", query="What is my dog called?")

    failed, answer = run(scenario)

    assert not failed and memory.mtm_page.pk in [page["id"] for page in answer["pages"]]


def test_the_http_command_and_the_python_client_work_together(
    transactional_db, memory, token, fake_model_url, tmp_path
):
    command = blocks("From an MCP client", "sh")[0].strip()
    client = blocks("From an MCP client", "python")[0]
    port = str(free_port())
    assert command.startswith(f"{PYTHON} manage.py mcp_serve --http --port 8001") and "127.0.0.1:8001/mcp" in client
    env = child_env(DATABASE_URL=database_url_for_children(), **server_env(fake_model_url))
    argv = [sys.executable, *command.removeprefix(PYTHON).replace("8001", port).split()]

    with (tmp_path / "server.log").open("w") as log:
        server = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            assert wait_for(lambda: answers("127.0.0.1", int(port)), timeout=60)
            output = run_snippet(client.replace("8001", port), TOKEN=token)
        finally:
            stop(server)

    assert memory.mtm_page.pk in [page["id"] for page in json.loads(output)["pages"]]


def test_the_openai_client_examples_answer_from_memory_through_the_proxy(live_server, memory, token):
    plain, streamed, _ = blocks("Through the OpenAI-compatible memory proxy", "python")

    assert "Biscuit" in run_snippet(plain, MEMORYOS_URL=live_server.url, TOKEN=token)
    assert "Biscuit" in run_snippet(streamed, MEMORYOS_URL=live_server.url, TOKEN=token)


def test_the_function_calling_example_runs_its_tool_and_stores_only_the_final_answer(live_server, model, memory, token):
    tools_example = blocks("Through the OpenAI-compatible memory proxy", "python")[2]

    output = run_snippet(tools_example, MEMORYOS_URL=live_server.url, TOKEN=token)

    assert output.strip() == TOOL_ANSWERED
    page = Page.objects.get(user_message="Will it rain at my dog's walk tomorrow?")
    assert page.assistant_reply == TOOL_ANSWERED and "forecast" not in page.assistant_reply
