"""memory_import --from mem0|letta|memoryos: another system's export goes through the bundle import into a user,
with provenance on its pages; a second import changes nothing; a malformed one is refused clearly."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memory.models import EndUser, KnowledgeEntry, Page, ProfileVersion

DATA = Path(__file__).resolve().parents[2] / "data" / "importers"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("memory_import", *args, "--tenant", "acme", stdout=out)
    return out.getvalue()


@pytest.fixture
def acme(tenant, assistant):
    return tenant


def user(external_id: str) -> EndUser:
    return EndUser.objects.get(tenant__slug="acme", external_id=external_id)


def test_a_mem0_export_imports_as_user_facts_and_a_second_import_changes_nothing(acme):
    output = run(str(DATA / "mem0_export.json"), "--from", "mem0", "--user", "alex")

    assert "knowledge: 3" in output
    facts = KnowledgeEntry.objects.filter(end_user=user("alex"))
    paris = facts.get(text="Is travelling to Paris in June")
    assert paris.kind == "user" and paris.valid_from.isoformat() == "2025-02-26T06:57:00.108347+00:00"
    assert "already imported" in run(str(DATA / "mem0_export.json"), "--from", "mem0", "--user", "alex")
    assert facts.count() == 3


def test_a_letta_agent_file_imports_turns_with_their_origin_and_the_human_block_as_profile(acme):
    run(str(DATA / "letta_agent.af"), "--from", "letta", "--user", "chad")

    pages = Page.objects.filter(space__end_user=user("chad")).order_by("seq")
    assert [p.user_message[:6] for p in pages] == ["Hi, I'", "Mostly"]
    first = pages[0]
    assert first.source == "import" and first.source_ref == "imported from letta (message-1)"
    assert first.source_meta["origin"] == {"system": "letta", "id": "message-1"}
    assert ProfileVersion.objects.filter(end_user=user("chad"), text__startswith="First name: Chad").exists()
    assert "already imported" in run(str(DATA / "letta_agent.af"), "--from", "letta", "--user", "chad")
    assert pages.count() == 2


def test_a_reference_memoryos_directory_imports_pages_segments_profile_and_facts(acme):
    output = run(str(DATA / "memoryos_user"), "--from", "memoryos", "--user", "alice-m", "--assistant", "ava")

    assert "pages: 4" in output and "segments: 1" in output and "knowledge: 2" in output
    pages = Page.objects.filter(space__end_user=user("alice-m")).order_by("seq")
    assert pages[0].source_ref == "imported from memoryos (page_aa11bb22)"
    assert pages[1].prev_page_id == pages[0].pk
    yoga = KnowledgeEntry.objects.get(end_user=user("alice-m"), text__startswith="Goes to yoga")
    assert yoga.source_ref.startswith("imported from memoryos (knowledge_base[")
    again = run(str(DATA / "memoryos_user"), "--from", "memoryos", "--user", "alice-m", "--assistant", "ava")
    assert "already imported" in again and pages.count() == 4


def test_a_dry_run_creates_nothing(acme):
    output = run(str(DATA / "letta_agent.af"), "--from", "letta", "--user", "dry", "--dry-run")

    assert "Would create for dry" in output and "pages: 2" in output
    assert not EndUser.objects.filter(external_id="dry").exists()


def test_a_malformed_export_is_refused_naming_the_problem(acme, tmp_path):
    (tmp_path / "bad.json").write_text('{"results": [{"id": "m1", "memory": 7}]}')

    with pytest.raises(CommandError, match=r"the mem0 export is refused: \$\.results\[0\]\.memory: expected text"):
        run(str(tmp_path / "bad.json"), "--from", "mem0", "--user", "alex")


def test_memory_for_an_assistant_the_tenant_lacks_is_refused_until_one_is_chosen(acme):
    with pytest.raises(CommandError, match="this tenant has no assistant 'memoryos'"):
        run(str(DATA / "memoryos_user"), "--from", "memoryos", "--user", "alice-m")
