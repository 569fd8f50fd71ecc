"""Personal data and review in a real Chromium: a dpo sets the policy, sees an email masked, reveals it with a reason,
re-scans stored memory and watches it finish, and approves a pending fact. Screenshots: var/screenshots/pii-*."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.models import AuditEntry, KnowledgeEntry, Page, PersonalDataPolicy, ReviewState
from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMAIL = "ann.lee@example.co.uk"


@pytest.fixture
def remembered(tenant, assistant, alice, dpo_user):
    space = builders.space_of(alice, assistant)
    builders.turn(space, user_message=f"My email is {EMAIL}", assistant_reply="Noted.")
    fact = builders.knowledge(alice, text="The user sees a therapist.")
    KnowledgeEntry.objects.filter(pk=fact.pk).update(review_state=ReviewState.PENDING)
    return fact


def test_a_dpo_masks_reveals_rescans_and_reviews(page, screenshot, tenant, alice, remembered):
    log_in(page, "dpo-of-acme", PASSWORD)
    page.goto("/console/acme/personal-data/")
    page.select_option("#id_email", "mask_console")
    page.fill("#id_reason", "Mask emails for agents")
    screenshot(page, "pii-policy")
    with page.expect_navigation():
        page.click("button:has-text('Save the policy')")
    expect(page.locator(".message")).to_contain_text("policy was saved")
    assert PersonalDataPolicy.objects.get(tenant=tenant).email == "mask_console"

    page.goto(f"/console/acme/users/{alice.pk}/")
    expect(page.locator("#tab-short-term")).to_contain_text("My email is [email]")
    page.click("details.reveal summary")
    page.fill("#reveal-reason", "The customer asked us to confirm their email")
    with page.expect_navigation():
        page.click("button:has-text('Reveal (audited)')")
    expect(page.locator("#tab-short-term")).to_contain_text(EMAIL)
    screenshot(page, "pii-revealed")
    assert AuditEntry.objects.filter(action="personal_data.reveal", subject_id=alice.pk).count() == 1

    page.goto("/console/acme/personal-data/")
    page.select_option("#id_email", "do_not_store")
    page.fill("#id_reason", "Emails are not needed")
    with page.expect_navigation():
        page.click("button:has-text('Save the policy')")
    with page.expect_navigation():
        page.click("button:has-text('Re-scan stored memory')")
    expect(page.locator("tr.scan .chip").first).to_have_text("Done", timeout=30_000)  # polled by htmx if still running
    screenshot(page, "pii-rescan")
    assert Page.objects.get(space__end_user=alice).user_message == "My email is [email]"

    page.goto("/console/acme/review/")
    item = page.locator(f"#review-knowledge-{remembered.pk}")
    expect(item).to_contain_text("The user sees a therapist.")
    screenshot(page, "pii-review")
    page.evaluate("window.stillTheSamePage = true")
    item.locator("button[value=approve]").click()
    # htmx swaps the decided row in place of the item: no page load
    expect(page.locator(f"#review-knowledge-{remembered.pk}.decided")).to_contain_text("Approved")
    assert page.evaluate("window.stillTheSamePage") is True
    assert KnowledgeEntry.objects.get(pk=remembered.pk).review_state == ReviewState.APPROVED
