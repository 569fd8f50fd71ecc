"""docs/connecting.md, run as written: each marked snippet runs in a process of its own against the site as
`make run` serves it, with the page's address and token placeholders replaced by the live site's and a real token."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.foundation.processes import REPO, child_env

PAGE = Path(__file__).resolve().parents[2] / "docs" / "connecting.md"
ADDRESS, TOKEN = "http://127.0.0.1:8000", "mos_..."

pytestmark = [pytest.mark.slow, pytest.mark.worker]


def snippets() -> dict[str, str]:
    """The page's Python blocks that follow a `<!-- snippet: NAME -->` marker, by name."""
    return dict(re.findall(r"<!-- snippet: (\w+) -->\n```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL))


def run_snippet(name: str, *, site: str, token: str) -> str:
    """Snippet `name` with the live site and `token` in place of the page's placeholders; what it printed."""
    code = snippets()[name]
    assert ADDRESS in code and TOKEN in code, f"the {name} snippet no longer uses the page's placeholders"
    code = code.replace(ADDRESS, site).replace(TOKEN, token)
    result = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_the_page_has_the_three_snippets():
    assert set(snippets()) == {"openai", "mcp", "langchain"}


def test_the_openai_client_answers_from_memory_through_the_proxy(transactional_db, memory, token, site_url):
    assert "Biscuit" in run_snippet("openai", site=site_url, token=token)


def test_the_mcp_client_retrieves_memory_at_the_sites_mcp_path(transactional_db, memory, token, site_url):
    answer = json.loads(run_snippet("mcp", site=site_url, token=token))

    assert memory.mtm_page.pk in [page["id"] for page in answer["pages"]]


def test_langchains_chat_model_answers_from_memory_through_the_proxy(transactional_db, memory, token, site_url):
    assert "Biscuit" in run_snippet("langchain", site=site_url, token=token)
