"""What came from another memory system says so wherever it is shown: the end user's memory page, the console's
fact page and the context preview name the system and the record ("imported from mem0 (<id>)")."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import KnowledgeEntry, Page
from tests import builders
from tests.conftest import PASSWORD

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"
PARIS = "f38b689d-6b24-45b7-bced-17fbb4d8bac7"


def imported(path: str, source_format: str, external_id: str) -> None:
    call_command(
        "memory_import", str(DATA / path), "--from", source_format, "--tenant", "acme", "--user", external_id,
        "--assistant", "ava", stdout=io.StringIO(),
    )  # fmt: skip


@pytest.fixture
def alices_imports(alice, assistant):
    imported("mem0_export.json", "mem0", "alice")
    imported("letta_agent.af", "letta", "alice")
    return alice


def test_an_imported_fact_names_the_record_it_came_from(alices_imports):
    paris = KnowledgeEntry.objects.get(end_user=alices_imports, text="Is travelling to Paris in June")

    assert paris.source_ref == f"imported from mem0 ({PARIS})" == paris.imported_from


def test_the_end_users_memory_page_shows_where_imported_facts_and_turns_came_from(client, alices_imports):
    client.login(username="alice", password=PASSWORD)

    page = client.get("/chat/ava/memory/").content.decode()

    assert f"imported from mem0 ({PARIS})" in page
    assert "imported from letta (message-1)" in page


def test_the_console_fact_page_says_where_the_fact_came_from(client, agent_user, alices_imports):
    paris = KnowledgeEntry.objects.get(end_user=alices_imports, text="Is travelling to Paris in June")
    client.force_login(agent_user)

    page = client.get(f"/console/acme/knowledge/{paris.pk}/").content.decode()

    assert "Came from" in page and f"imported from mem0 ({PARIS})" in page


def test_the_context_preview_names_the_origin_of_imported_facts_and_turns(client, agent_user, alices_imports):
    client.force_login(agent_user)

    response = client.get(f"/console/acme/users/{alices_imports.pk}/preview/", {"q": "Chad sailing Paris in June"})

    turn = Page.objects.get(space__end_user=alices_imports, source_ref="imported from letta (message-1)")
    provenance = response.context["preview"].provenance
    assert provenance[("page", turn.pk)] == "imported from letta (message-1)"
    assert f"imported from mem0 ({PARIS})" in provenance.values()
    body = response.content.decode()
    assert "imported from letta (message-1) ·" in body and f"imported from mem0 ({PARIS}) ·" in body


def test_a_fact_written_here_names_no_other_system(alice):
    entry = builders.knowledge(alice, text="Likes green tea")

    assert entry.source_ref == "" and entry.imported_from == ""
