"""The console's import form with a format: a Letta agent file or a reference MemoryOS directory (zipped)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile

from memory.models import MemoryImport, Page

DATA = Path(__file__).resolve().parents[1] / "data" / "importers"


def upload(client, end_user, content: bytes, name: str, source_format: str, **fields):
    url = f"/console/acme/users/{end_user.pk}/import/"
    return client.post(url, {"format": source_format, "bundle": SimpleUploadedFile(name, content), **fields})


def test_a_letta_agent_file_shows_its_dry_run_then_imports(client, dpo_user, bob, assistant):
    client.force_login(dpo_user)

    response = upload(client, bob, (DATA / "letta_agent.af").read_bytes(), "agent.af", "letta")

    page = response.content.decode()
    assert "Dry run: what will be created" in page and "Hi, I&#x27;m Chad" in page
    staged = MemoryImport.objects.get(end_user=bob, status="staged")
    client.post(f"/console/acme/users/{bob.pk}/import/{staged.pk}/")
    assert Page.objects.filter(space__end_user=bob, source_ref="imported from letta (message-1)").exists()


def test_a_zipped_reference_memoryos_directory_is_accepted(client, dpo_user, bob, assistant):
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for path in (DATA / "memoryos_user").iterdir():
            archive.write(path, f"users/bob/{path.name}")
    client.force_login(dpo_user)

    response = upload(client, bob, packed.getvalue(), "bob.zip", "memoryos", assistant="ava")

    assert 'Pages (turns)</td><td class="num">4</td>' in response.content.decode()


def test_a_malformed_export_shows_its_problem_on_the_form(client, dpo_user, bob, assistant):
    client.force_login(dpo_user)

    response = upload(client, bob, b'{"results": "all of them"}', "mem0.json", "mem0")

    assert "The mem0 export is refused: $.results: expected a list of memories" in response.content.decode()
    assert not MemoryImport.objects.exists()


def test_the_form_offers_the_formats(client, dpo_user, bob):
    client.force_login(dpo_user)

    page = client.get(f"/console/acme/users/{bob.pk}/import/").content.decode()

    assert 'value="letta"' in page and 'value="memoryos"' in page and 'value="mem0"' in page
