"""The console's memory import in a real Chromium: a data-protection officer uploads Alice's export for Carol, reads
the dry run, confirms, and Carol has the same memory. Screenshots: var/screenshots/import-*."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from playwright.sync_api import expect

from memory.models import EndUser
from memory.services.tenancy import end_user_create
from tests.browser.conftest import log_in
from tests.bundles import bundle_bytes, governed_memory, memory_of
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _no_capture(execute: bool = True):
    """With a transactional live server, on-commit callbacks run by themselves."""
    return nullcontext()


@pytest.fixture
def export_file(tenant, assistant, alice, dpo_user, tmp_path):
    governed_memory(alice, assistant, _no_capture)
    path = tmp_path / "export.json"
    path.write_bytes(bundle_bytes(alice))
    return path


def test_a_dpo_imports_a_bundle_after_reading_its_dry_run(page, screenshot, export_file, tenant, alice):
    carol = end_user_create(tenant=tenant, external_id="carol", display_name="Carol")
    log_in(page, "dpo-of-acme", PASSWORD)

    page.goto(f"/console/acme/users/{carol.pk}/gdpr/")
    page.click("text=Import a bundle…")
    page.set_input_files("input[name=bundle]", str(export_file))
    page.click("button:has-text('Check the bundle (dry run)')")

    expect(page.locator("#dry-run")).to_contain_text("Pages (turns)")
    expect(page.locator("#dry-run tr", has_text="Pages (turns)")).to_contain_text("12")
    expect(page.locator("#preview")).to_contain_text("I am planning a trip to Lisbon")
    screenshot(page, "import-dry-run")
    page.click("button:has-text('Import into Carol')")

    expect(page.locator("body")).to_contain_text("Imported 12 pages")
    expect(page.locator("#imports")).to_contain_text("dpo-of-acme")
    screenshot(page, "import-done")
    assert memory_of(EndUser.objects.get(pk=carol.pk)) == memory_of(alice)
