"""python manage.py memory_import: a bundle file into a user of another tenant, a dry run, and clear refusals."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memory.models import EndUser, Page
from memory.services.gdpr import user_erase
from tests.bundles import DPO, bundle_bytes, governed_memory, memory_of


@pytest.fixture
def bundle_file(alice, assistant, django_capture_on_commit_callbacks, tmp_path):
    governed_memory(alice, assistant, django_capture_on_commit_callbacks)
    path = tmp_path / "export.json"
    path.write_bytes(bundle_bytes(alice))
    return path


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("memory_import", *args, stdout=out)
    return out.getvalue()


def test_it_imports_a_bundle_file_into_a_new_user_of_another_tenant(bundle_file, alice, other_tenant):
    output = run(str(bundle_file), "--tenant", "globex", "--user", "alice-at-globex")

    imported = EndUser.objects.get(tenant=other_tenant, external_id="alice-at-globex")
    assert memory_of(imported) == memory_of(alice)
    assert "Created for alice-at-globex" in output and "pages: 12" in output


def test_a_dry_run_says_what_would_be_created_and_creates_nothing_not_even_the_user(bundle_file, other_tenant):
    output = run(str(bundle_file), "--tenant", "globex", "--user", "newcomer", "--dry-run")

    assert (
        "Would create for newcomer" in output and "pages: 12" in output and "not imported, chat replies" not in output
    )
    assert not EndUser.objects.filter(tenant=other_tenant, external_id="newcomer").exists()


def test_running_it_twice_imports_once(bundle_file, other_tenant):
    run(str(bundle_file), "--tenant", "globex", "--user", "twice")

    output = run(str(bundle_file), "--tenant", "globex", "--user", "twice")

    assert "already imported" in output
    assert Page.objects.filter(space__end_user__external_id="twice").count() == 12


def test_an_invalid_bundle_is_refused_with_its_path_and_reason(bundle_file, other_tenant):
    bundle = json.loads(bundle_file.read_text())
    bundle["memory"][0]["pages"][3]["tier"] = "ltm"
    bundle_file.write_text(json.dumps(bundle))

    with pytest.raises(CommandError, match=r"refused: \$\.memory\[0\]\.pages\[3\]\.tier: 'ltm' is not one of"):
        run(str(bundle_file), "--tenant", "globex", "--user", "someone")
    assert not EndUser.objects.filter(tenant=other_tenant, external_id="someone").exists()


def test_it_chooses_the_assistant_with_the_assistant_option(bundle_file, other_tenant):
    from memory.services.tenancy import assistant_create

    assistant_create(tenant=other_tenant, external_id="max", name="Max")

    run(str(bundle_file), "--tenant", "globex", "--user", "maxed", "--assistant", "max")

    assert Page.objects.filter(space__end_user__external_id="maxed", space__assistant__external_id="max").count() == 12


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tenant", "nowhere", "--user", "x"], "no tenant 'nowhere'"),
        (["--tenant", "globex", "--user", "x", "--assistant", "nobody"], "no assistant 'nobody'"),
    ],
)
def test_an_unknown_tenant_or_assistant_is_a_clear_error(bundle_file, other_tenant, args, message):
    with pytest.raises(CommandError, match=message):
        run(str(bundle_file), *args)


def test_a_missing_file_and_an_erased_user_are_clear_errors(bundle_file, stranger, tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        run(str(tmp_path / "missing.json"), "--tenant", "globex", "--user", "x")

    user_erase(end_user=stranger, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    with pytest.raises(CommandError, match="erased"):
        run(str(bundle_file), "--tenant", "globex", "--user", "stranger")
