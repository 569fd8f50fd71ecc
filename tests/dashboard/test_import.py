"""The console's memory import (dpo and admin): upload, a dry run of what will be created, then confirm."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.models import AuditEntry, MemoryImport, Page
from tests import builders
from tests.bundles import bundle_bytes, governed_memory, memory_of


@pytest.fixture
def bundle_file(alice, assistant, django_capture_on_commit_callbacks) -> bytes:
    governed_memory(alice, assistant, django_capture_on_commit_callbacks)
    return bundle_bytes(alice)


@pytest.fixture
def bob_url(bob) -> str:
    return f"/console/acme/users/{bob.pk}/import/"


def upload(client, url: str, content: bytes, name: str = "export.json", **fields):
    return client.post(url, {"bundle": SimpleUploadedFile(name, content), **fields})


def test_a_dpo_sees_the_dry_run_then_confirms_and_the_user_has_the_memory(
    client, dpo_user, alice, bob, bundle_file, bob_url
):
    client.force_login(dpo_user)

    dry_run = upload(client, bob_url, bundle_file)

    page = dry_run.content.decode()
    assert dry_run.status_code == 200 and "Dry run: what will be created" in page
    assert 'Pages (turns)</td><td class="num">12</td>' in page
    assert not Page.objects.filter(space__end_user=bob).exists()
    staged = MemoryImport.objects.get(end_user=bob, status="staged")
    confirm = client.post(f"/console/acme/users/{bob.pk}/import/{staged.pk}/")
    assert confirm.status_code == 302 and confirm["Location"] == f"/console/acme/users/{bob.pk}/gdpr/"
    assert memory_of(bob) == memory_of(alice)
    assert AuditEntry.objects.filter(action="memory.import", actor_label="dpo-of-acme").count() == 1
    assert "Imported 12 pages" in client.get(confirm["Location"]).content.decode()


def test_the_exports_zip_is_accepted_too(client, admin_user, bob, bundle_file, bob_url):
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as bundle:
        bundle.writestr("export.json", bundle_file)
    client.force_login(admin_user)

    response = upload(client, bob_url, packed.getvalue(), name="memoryos-export-1.zip")

    assert "Dry run: what will be created" in response.content.decode()


def test_an_invalid_bundle_shows_its_first_problem_on_the_form(client, dpo_user, bob, bundle_file, bob_url):
    client.force_login(dpo_user)

    response = upload(client, bob_url, bundle_file.replace(b'"tier": "mtm"', b'"tier": "deep"', 1))

    page = response.content.decode()
    assert "The bundle is refused: $.memory[0].pages[0].tier" in page and "Dry run" not in page
    assert not MemoryImport.objects.exists()


def test_html_in_a_bundle_is_shown_as_text(client, dpo_user, bob, bundle_file, bob_url):
    client.force_login(dpo_user)
    hostile = bundle_file.replace(b"I am planning a trip", b"<script>alert(1)</script> I am planning a trip", 1)

    page = upload(client, bob_url, hostile).content.decode()

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page


def test_paused_memory_is_refused_with_a_clear_message(client, dpo_user, bob, assistant, bundle_file, bob_url):
    builders.pause(builders.space_of(bob, assistant))
    client.force_login(dpo_user)

    page = upload(client, bob_url, bundle_file).content.decode()

    assert "is paused; resume it to import" in page and "Confirm the import" not in page


def test_confirming_twice_imports_once(client, dpo_user, bob, bundle_file, bob_url):
    client.force_login(dpo_user)
    upload(client, bob_url, bundle_file)
    staged = MemoryImport.objects.get(end_user=bob, status="staged")
    client.post(f"/console/acme/users/{bob.pk}/import/{staged.pk}/")

    again = client.post(f"/console/acme/users/{bob.pk}/import/{staged.pk}/")
    dry_run_again = upload(client, bob_url, bundle_file).content.decode()

    assert again.status_code == 404
    assert (
        "already imported for Bob; there is nothing to do" in dry_run_again
        and "Confirm the import" not in dry_run_again
    )
    assert not MemoryImport.objects.filter(status="staged").exists()
    assert Page.objects.filter(space__end_user=bob).count() == 12


@pytest.mark.parametrize("persona", ["agent_user", "supervisor_user"])
def test_agents_and_supervisors_cannot_import(client, request, persona, bob, bob_url, bundle_file):
    client.force_login(request.getfixturevalue(persona))

    assert client.get(bob_url).status_code == 403
    assert upload(client, bob_url, bundle_file).status_code == 403


def test_another_tenants_operator_gets_404(client, dpo_user, other_operator, bob, bob_url, bundle_file, stranger):
    client.force_login(dpo_user)
    upload(client, bob_url, bundle_file)
    staged = MemoryImport.objects.get(end_user=bob, status="staged")
    client.force_login(other_operator)

    assert client.get(bob_url).status_code == 404
    assert upload(client, bob_url, bundle_file).status_code == 404
    assert client.post(f"/console/acme/users/{bob.pk}/import/{staged.pk}/").status_code == 404
    assert client.post(f"/console/globex/users/{bob.pk}/import/{staged.pk}/").status_code == 404
    assert not Page.objects.filter(space__end_user=bob).exists()
    # and Acme's operators cannot reach Globex's user either
    assert client.get(f"/console/globex/users/{bob.pk}/import/").status_code == 404


def test_a_staged_bundle_of_another_user_is_not_found(client, dpo_user, alice, bob, bundle_file, bob_url):
    client.force_login(dpo_user)
    upload(client, bob_url, bundle_file)
    staged = MemoryImport.objects.get(end_user=bob, status="staged")

    response = client.post(f"/console/acme/users/{alice.pk}/import/{staged.pk}/")

    assert response.status_code == 404


def test_the_gdpr_page_links_to_the_import(client, dpo_user, bob, bob_url):
    client.force_login(dpo_user)

    page = client.get(f"/console/acme/users/{bob.pk}/gdpr/").content.decode()

    assert f'href="{bob_url}"' in page
