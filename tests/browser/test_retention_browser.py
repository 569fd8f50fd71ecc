"""Retention and legal hold in a real Chromium: a data-protection officer sets the policy, reads the dry run, runs it
and opens the run; then puts a user under legal hold, finds the Erase button disabled with the reason beside it, and
releases the hold. Screenshots: var/screenshots/retention-*."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memory.models import EndUser, LegalHold, Page, RetentionRun
from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def old_memory(tenant, alice, bob, dpo_user):
    long_ago = timezone.now() - timedelta(days=730)
    space = builders.space_of(bob)
    builders.segment_with_pages(space, summary="beans", messages=["I grow beans.", "Beans need sun."], at=long_ago)
    builders.page(space, user_message="I like tea.")
    return bob


def test_a_dpo_sets_the_policy_runs_it_and_holds_a_user(page, screenshot, old_memory, alice):
    log_in(page, "dpo-of-acme", PASSWORD)
    page.goto("/console/acme/")
    page.click("nav >> text=Retention")
    page.fill("#id_pages", "180")
    with page.expect_navigation():
        page.click("#policy button[type=submit]")
    expect(page.locator(".message", has_text="Saved the retention policy")).to_be_visible()
    expect(page.locator("#dry-run tr[data-tier=pages] td.num")).to_have_text("2")
    screenshot(page, "retention-policy-and-dry-run")

    page.fill("#run-now-reason", "The policy was shortened today")
    with page.expect_navigation():
        page.click("#dry-run button:has-text('Run now')")
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#dry-run tr[data-tier=pages] td.num")).to_have_text("0")
    assert Page.objects.filter(space__end_user=old_memory).count() == 1
    page.click("#runs a:has-text('Open')")
    expect(page.locator("tr[data-tier=pages] td.num").nth(1)).to_have_text("2")
    screenshot(page, "retention-run")
    assert RetentionRun.objects.get().removed["pages"] == 2

    page.goto(f"/console/acme/users/{alice.pk}/")
    page.fill("#id_hold_reason", "Litigation hold, case 2026-114")
    with page.expect_navigation():
        page.click("#legal-hold button:has-text('Place a legal hold')")
    expect(page.locator("#legal-hold")).to_contain_text("Under legal hold")
    screenshot(page, "retention-legal-hold")

    page.goto(f"/console/acme/users/{alice.pk}/erase/")
    expect(page.locator("#legal-hold-note")).to_contain_text("erasure is suspended")
    expect(page.locator("button:has-text('Erase')")).to_be_disabled()
    expect(page.locator("#legal-hold-reason")).to_contain_text("nothing can be deleted")
    assert EndUser.objects.filter(pk=alice.pk, is_active=True).exists()

    page.goto(f"/console/acme/users/{alice.pk}/")
    page.fill("#id_hold_reason", "Case settled")
    with page.expect_navigation():
        page.click("#legal-hold button:has-text('Release the hold')")
    expect(page.locator("#legal-hold")).to_contain_text("Not under legal hold")
    assert LegalHold.objects.get(end_user=alice).release_reason == "Case settled"
