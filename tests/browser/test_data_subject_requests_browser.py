"""Data-subject requests in a real Chromium: a data-protection officer logs an erasure request as it arrived, the
inbox shows its due date one calendar month on, and fulfilling it (an HTMX swap) erases the user and attaches the
receipt. Screenshots: var/screenshots/requests-*."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.models import DataSubjectRequest, EndUser, ErasureReceipt
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_dpo_logs_an_erasure_request_and_fulfilling_it_attaches_the_receipt(page, screenshot, dpo_user, alice):
    log_in(page, "dpo-of-acme", PASSWORD)
    page.goto("/console/acme/")
    page.click("nav >> text=Requests")
    page.click("text=Log a request")
    page.select_option("#id_kind", "erasure")
    page.fill("#id_external_id", "alice")
    page.fill("#id_requester", "Alice Example, alice@example.org")
    page.select_option("#id_channel", "email")
    page.fill("#id_received_at", "2025-01-31T12:00")
    page.fill("#id_identity_check", "Replied from the address on file")
    with page.expect_navigation():
        page.click("button:has-text('Log the request')")
    expect(page.locator("#case-due")).to_contain_text("28 Feb 2025")

    page.click(".crumbs >> text=Requests")
    row = page.locator("#request-list tbody tr").first
    expect(row).to_contain_text("28 Feb 2025")
    expect(row).to_contain_text("overdue")
    screenshot(page, "requests-inbox")

    row.locator("a").first.click()
    page.fill("#fulfil-note", "Identity confirmed by reply")
    page.click("#case button:has-text('Fulfil')")
    expect(page.locator("#case-status")).to_contain_text("Fulfilled")
    expect(page.locator("#case-receipt")).to_be_visible()
    screenshot(page, "requests-fulfilled")
    request = DataSubjectRequest.objects.get()
    assert request.erasure_receipt == ErasureReceipt.objects.get()
    assert not EndUser.objects.filter(pk=alice.pk).exists()
