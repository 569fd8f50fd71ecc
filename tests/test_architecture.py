"""Rules about where code may live, checked by reading the source (Zulip-style lint rules with examples).

Each rule is a small checker over (path, text) pairs; the tests run it over the project and over a good and a bad
example, so a checker that stops catching anything fails too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"tests", ".venv", "var", ".git", "node_modules", "build", "dist", "__pycache__"}

Source = tuple[str, str]  # (path relative to the repository, text)

OPENAI_IMPORT = re.compile(r"^\s*(?:import\s+openai\b|from\s+openai\b)", re.MULTILINE)
OPENAI_SEAM = "memory/llm.py"

VECTOR_SQL = re.compile(r"CosineDistance|L2Distance|MaxInnerProduct|<=>|<->|hnsw", re.IGNORECASE)
RETRIEVAL = "memory/retrieval.py"

UI_APPS = ("dashboard/", "chat/")
MODEL_WRITE = re.compile(r"\.objects\.create\(|\.save\(|\.delete\(|\.update\(|bulk_create|bulk_update")


def project_sources() -> list[Source]:
    sources = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if SKIPPED_DIRS.intersection(relative.parts[:-1]):
            continue
        sources.append((relative.as_posix(), path.read_text()))
    return sources


def _code(text: str) -> str:
    """The text without comments, so prose about a rule does not break it."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        lines.append(line.split("  #", 1)[0])
    return "\n".join(lines)


def openai_outside_its_seam(sources: Iterable[Source]) -> list[str]:
    """Modules other than memory/llm.py that import the OpenAI client."""
    return [path for path, text in sources if path != OPENAI_SEAM and OPENAI_IMPORT.search(_code(text))]


def vector_sql_outside_retrieval(sources: Iterable[Source]) -> list[str]:
    """Modules other than memory/retrieval.py (and migrations) that use vector distances or HNSW settings."""
    return [
        path
        for path, text in sources
        if path != RETRIEVAL and "/migrations/" not in path and VECTOR_SQL.search(_code(text))
    ]


def ui_writes_models(sources: Iterable[Source]) -> list[str]:
    """Lines in dashboard/ and chat/ that write models directly instead of calling a memory service."""
    found = []
    for path, text in sources:
        if not path.startswith(UI_APPS) or "/migrations/" in path:
            continue
        for number, line in enumerate(_code(text).splitlines(), start=1):
            if MODEL_WRITE.search(line):
                found.append(f"{path}:{number}: {line.strip()}")
    return found


def ui_defines_models(sources: Iterable[Source]) -> list[str]:
    """dashboard/ and chat/ have no models: every domain model lives in memory/."""
    model_class = re.compile(r"^class\s+\w+\((?:models\.)?Model\)", re.MULTILINE)
    return [path for path, text in sources if path.startswith(UI_APPS) and model_class.search(_code(text))]


RULES = [openai_outside_its_seam, vector_sql_outside_retrieval, ui_writes_models, ui_defines_models]


@pytest.mark.parametrize("rule", RULES, ids=[rule.__name__ for rule in RULES])
def test_the_project_follows_the_rule(rule):
    assert rule(project_sources()) == []


def test_the_scan_covers_the_apps_and_skips_tests_and_the_venv():
    paths = [path for path, _ in project_sources()]

    assert "memory/roles.py" in paths and "manage.py" in paths
    assert any(path.startswith("dashboard/") for path in paths)
    assert not any(path.startswith(("tests/", ".venv/", "var/")) for path in paths)


def test_openai_may_be_imported_only_by_the_llm_seam():
    assert openai_outside_its_seam([(OPENAI_SEAM, "from openai import OpenAI\n")]) == []
    assert openai_outside_its_seam([("chat/views.py", "from memory.llm import build_client\n")]) == []
    assert openai_outside_its_seam([("chat/views.py", "# we never import openai here\n")]) == []

    assert openai_outside_its_seam([("chat/views.py", "import openai\n")]) == ["chat/views.py"]
    assert openai_outside_its_seam([("memory/x.py", "    from openai import OpenAI\n")]) == ["memory/x.py"]


def test_vector_sql_may_appear_only_in_retrieval():
    good = "qs.annotate(distance=CosineDistance('embedding', v))\nSET LOCAL hnsw.ef_search = 100\n"
    assert vector_sql_outside_retrieval([(RETRIEVAL, good)]) == []
    assert vector_sql_outside_retrieval([("memory/migrations/0002_hnsw.py", "HnswIndex(...)")]) == []
    assert vector_sql_outside_retrieval([("memory/services/x.py", "from memory.retrieval import pages_near\n")]) == []

    for bad in ("CosineDistance('embedding', v)", "ORDER BY embedding <=> %s", "SET hnsw.ef_search = 40"):
        assert vector_sql_outside_retrieval([("dashboard/views.py", bad)]) == ["dashboard/views.py"]


def test_dashboard_and_chat_write_memory_only_through_services():
    good = "from memory.services.knowledge import knowledge_pin\nknowledge_pin(entry_id=entry.id)\n"
    assert ui_writes_models([("dashboard/views.py", good)]) == []
    assert ui_writes_models([("memory/services/x.py", "Page.objects.create(space=space)\n")]) == []

    for bad in (
        "Page.objects.create(space=space)",
        "segment.save()",
        "entry.delete()",
        "Segment.objects.filter(pk=1).update(pinned=True)",
        "KnowledgeEntry.objects.bulk_create(entries)",
    ):
        assert ui_writes_models([("chat/services.py", bad)]) == [f"chat/services.py:1: {bad}"]


def test_dashboard_and_chat_define_no_models():
    assert ui_defines_models([("dashboard/models.py", "from django.db import models\n")]) == []
    assert ui_defines_models([("memory/models/x.py", "class Page(models.Model):\n")]) == []

    assert ui_defines_models([("chat/models.py", "class Draft(models.Model):\n")]) == ["chat/models.py"]


SETTING_FROM_ENV = re.compile(r"""env_(?:str|bool|int|float|list)\(\s*["']([A-Z][A-Z0-9_]*)["']""")


def settings_missing_from_readme(settings_text: str, readme_text: str) -> list[str]:
    """Environment variables read by settings.py that the README's configuration tables do not list."""
    return sorted({name for name in SETTING_FROM_ENV.findall(settings_text) if f"`{name}`" not in readme_text})


def test_every_environment_variable_is_documented_in_the_readme():
    settings_text = (ROOT / "memoryos_site" / "settings.py").read_text()
    readme_text = (ROOT / "README.md").read_text()

    assert settings_missing_from_readme(settings_text, readme_text) == []


def test_the_readme_check_catches_an_undocumented_variable():
    settings_text = 'DEBUG = env_bool("DEBUG", False)\nNEW = env_int("BRAND_NEW", 3)\n'

    assert settings_missing_from_readme(settings_text, "| `DEBUG` | `false` |") == ["BRAND_NEW"]
    assert settings_missing_from_readme(settings_text, "| `DEBUG` | | `BRAND_NEW` |") == []
