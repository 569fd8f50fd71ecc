"""The operator console in a real Chromium: a supervisor finds a user, pins a fact, forgets a page and reads the heat
plot; a data-protection officer exports the user's data and erases them. Screenshots: var/screenshots/dashboard-*."""

from __future__ import annotations

import re
import zipfile
from contextlib import nullcontext

import pytest
from playwright.sync_api import expect

from memory.models import AuditEntry, EndUser, ErasureReceipt, KnowledgeEntry, Page
from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _no_capture(execute: bool = True):
    """With a transactional live server, on-commit callbacks run by themselves."""
    return nullcontext()


@pytest.fixture
def console_data(tenant, assistant, alice, bob, supervisor_user, dpo_user, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    builders.conversations(alice, assistant, capture=_no_capture)
    builders.conversations(bob, assistant, capture=_no_capture, rounds=1, promote=False)
    return alice


def _modal_submit(tab, reason: str) -> None:
    tab.wait_for_selector(".modal textarea[name=reason]")
    tab.fill(".modal textarea[name=reason]", reason)
    with tab.expect_navigation():
        tab.click(".modal button[type=submit]")


def test_a_supervisor_pins_forgets_and_reads_heat_then_a_dpo_exports_and_erases(page, screenshot, console_data):
    alice = console_data
    log_in(page, "supervisor-of-acme", PASSWORD)
    page.goto("/console/acme/users/")
    page.fill("#id_q", "Alic")
    expect(page.locator("#results tbody tr")).to_have_count(1)  # HTMX swapped the results in
    screenshot(page, "dashboard-users")

    page.click("#results a:has-text('Alice')")
    page.wait_for_selector("#tab-short-term")
    page.click(".case-tabs a[data-tab=long-term]")
    page.wait_for_selector("#tab-long-term")
    screenshot(page, "dashboard-user-memory")

    fact_row = page.locator("#tab-long-term table tbody tr").first
    fact_text = fact_row.locator("td").first.locator("a").inner_text()
    fact_row.locator("[data-action=pin]").click()
    page.wait_for_selector(".modal textarea[name=reason]")
    screenshot(page, "dashboard-pin-modal")
    _modal_submit(page, "Customer asked us to always remember this")
    assert page.locator(".message", has_text="now pinned").is_visible()
    assert KnowledgeEntry.objects.get(end_user=alice, text=fact_text).pinned

    stm_before = Page.objects.filter(space__end_user=alice).count()
    page.click(".case-tabs a[data-tab=short-term]")
    page.locator("#tab-short-term .turn").first.locator("[data-action=forget]").click()
    expect(page.locator(".modal #forget-impact")).to_contain_text("This forget removes this turn")
    _modal_submit(page, "Customer shared card details by mistake")
    assert page.locator(".message", has_text="was forgotten").is_visible()
    assert Page.objects.filter(space__end_user=alice).count() == stm_before - 1
    assert AuditEntry.objects.filter(action="page.forget", reason="Customer shared card details by mistake").exists()

    page.click(".case-tabs a[data-tab=mid-term]")
    page.locator("#tab-mid-term table a.strong").first.click()
    page.wait_for_selector("#segment-heat .main-svg")
    assert page.locator("#segment-heat .scatterlayer .trace").count() >= 3
    screenshot(page, "dashboard-heat-plot")

    page.goto(f"/console/acme/users/{alice.pk}/profile/")
    page.select_option("#id_a", "1")
    expect(page.locator("#diff ins").first).to_be_visible()  # the diff of version 1 against the current one
    screenshot(page, "dashboard-profile-diff")

    page.goto(f"/console/acme/users/{alice.pk}/preview/")
    page.fill("#id_q", "Where should I eat in Lisbon?")
    page.click("button:has-text('Preview')")
    page.wait_for_selector(".prompt-section")
    screenshot(page, "dashboard-context-preview")

    page.goto("/console/acme/")
    page.wait_for_selector("#plot-llm .main-svg")
    screenshot(page, "dashboard-overview")

    page.context.clear_cookies()
    log_in(page, "dpo-of-acme", PASSWORD)
    page.goto(f"/console/acme/users/{alice.pk}/gdpr/")
    page.click("button:has-text('Prepare an export')")
    page.wait_for_selector("a:has-text('Download the export')")
    screenshot(page, "dashboard-export")
    with page.expect_download() as download:
        page.click("a:has-text('Download the export')")
    bundle = zipfile.ZipFile(download.value.path())
    assert sorted(bundle.namelist()) == ["export.html", "export.json"]
    assert "Lisbon" in bundle.read("export.json").decode()

    page.goto(f"/console/acme/users/{alice.pk}/gdpr/")
    page.click("a:has-text('Review erasure')")
    page.wait_for_selector("text=Dry run")
    screenshot(page, "dashboard-erase-dry-run")
    page.fill("#id_legal_basis", "GDPR Art. 17(1)(b): consent withdrawn")
    page.fill("#id_confirm", "alice")
    page.click("button:has-text('Erase Alice')")
    page.wait_for_selector("h1:has-text('Erasure receipt')")
    assert page.locator(".chip-ok", has_text="hash verifies").is_visible()
    screenshot(page, "dashboard-receipt")
    assert not EndUser.objects.filter(pk=alice.pk).exists()
    assert ErasureReceipt.objects.filter(subject_id=alice.pk).exists()

    page.goto("/console/acme/gdpr/")
    expect(page.locator("text=GDPR Art. 17(1)(b): consent withdrawn")).to_be_visible()
    screenshot(page, "dashboard-gdpr")

    page.goto("/console/acme/audit/")
    page.click("button:has-text('Verify chain')")
    page.wait_for_selector(".result.ok")
    assert re.search(r"Chain intact: \d+ entries since \d{4}-\d\d-\d\d", page.locator(".result.ok").inner_text())
    screenshot(page, "dashboard-audit")
