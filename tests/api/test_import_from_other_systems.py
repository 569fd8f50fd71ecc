"""POST /api/v1/users/{id}/import/ with `format`: another memory system's export through the bundle import."""

from __future__ import annotations

import json
from pathlib import Path

from memory.models import KnowledgeEntry, Page
from tests.api.conftest import error_of

URL = "/api/v1/users/{}/import/"
DATA = Path(__file__).resolve().parents[1] / "data" / "importers"


def source(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def memoryos_files() -> dict:
    return {path.name: json.loads(path.read_text()) for path in (DATA / "memoryos_user").iterdir()}


def test_a_mem0_export_imports_as_facts_and_a_second_time_changes_nothing(api, alice):
    body = {"format": "mem0", "bundle": source("mem0_export.json")}

    first = api.post(URL.format("alice"), body, format="json")
    second = api.post(URL.format("alice"), body, format="json")

    assert first.status_code == 201, first.content
    assert first.json()["counts"]["knowledge"] == 3
    assert second.status_code == 200 and second.json()["already_imported"]
    assert KnowledgeEntry.objects.filter(end_user=alice).count() == 3


def test_a_letta_agent_file_imports_turns_that_name_their_origin(api, alice):
    response = api.post(URL.format("alice"), {"format": "letta", "bundle": source("letta_agent.af")}, format="json")

    assert response.status_code == 201, response.content
    page = Page.objects.filter(space__end_user=alice).order_by("seq").first()
    assert page.source_ref == "imported from letta (message-1)"


def test_a_reference_memoryos_directory_imports_as_a_dry_run(api, alice):
    body = {"format": "memoryos", "bundle": memoryos_files(), "assistant": "ava", "dry_run": True}

    response = api.post(URL.format("alice"), body, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["counts"]["pages"] == 4 and not Page.objects.filter(space__end_user=alice).exists()


def test_a_malformed_export_is_a_400_naming_the_problem(api, alice):
    body = {"format": "letta", "bundle": {"agents": [{}, {}]}}

    response = api.post(URL.format("alice"), body, format="json")

    assert response.status_code == 400
    assert "The letta export is refused: $.agents: holds 2 agents" in str(error_of(response))


def test_an_unknown_format_is_a_400(api, alice):
    response = api.post(URL.format("alice"), {"format": "zep", "bundle": {}}, format="json")

    assert response.status_code == 400
