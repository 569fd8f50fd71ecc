"""docs/integrating.md's REST API examples, run as written: the token command, then each curl command
against the live server with the token it printed."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.services.tenancy import end_user_create, tenant_create

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrating.md"
EXPECTED_KEYS = {
    "/turns/": {"page_id", "queued_updating"},
    "/retrieve/": {"short_term", "pages", "profile", "knowledge"},
    "/chat/": {"reply", "memory_used"},
    "/pages/": {"id", "user_message", "assistant_reply"},
    "/erasure/": {"dry_run", "counts", "receipt"},
}


def page_commands() -> list[str]:
    """Every shell command of the section's REST part, with backslash-continued lines joined and comments dropped."""
    # the REST API's section; tests/integrations/test_mcp_and_proxy_doc.py runs the MCP and proxy ones
    section = PAGE.read_text().split("\n## The REST API\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL):
        joined = block.replace("\\\n", " ")
        commands += [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]
    return commands


def test_the_section_has_the_promised_examples():
    commands = page_commands()

    assert any("api_token_create" in c for c in commands)
    for path in EXPECTED_KEYS:
        assert any(c.startswith("curl") and path in c for c in commands), path


def _token_from(command: str) -> str:
    """Run `export TOKEN=$(... manage.py api_token_create ARGS)` in-process (the live server's database)."""
    inner = re.search(r"manage\.py (api_token_create[^)]*)\)", command).group(1)
    out = io.StringIO()
    call_command(*shlex.split(inner), stdout=out)
    return out.getvalue().strip()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed, so the examples cannot run")
def test_the_curl_examples_work_against_the_live_server(live_server):
    tenant = tenant_create(slug="demo", name="Demo")
    end_user_create(tenant=tenant, external_id="alice", display_name="Alice")
    env = {"PATH": "/usr/bin:/bin", "MEMORYOS_URL": live_server.url}
    ran = []

    for command in page_commands():
        if command.startswith("export MEMORYOS_URL="):
            continue
        if "api_token_create" in command:
            env["TOKEN"] = _token_from(command)
            continue
        assert command.startswith("curl"), command
        status, body = _curl(command, env)
        assert 200 <= status < 300, (command, status, body)
        path = next(p for p in EXPECTED_KEYS if p in command)
        assert EXPECTED_KEYS[path] <= set(body), (command, body)
        if path == "/turns/":
            env["PAGE_ID"] = str(body["page_id"])
        ran.append(path)

    assert sorted(ran) == sorted(EXPECTED_KEYS)


def _curl(command: str, env: dict) -> tuple[int, dict]:
    """The command as written, plus `-w` to learn the status code."""
    result = subprocess.run(
        ["bash", "-c", command + " -w '\\n%{http_code}'"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    body, status = result.stdout.rsplit("\n", 1)
    return int(status), json.loads(body)
