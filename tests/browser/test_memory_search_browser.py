"""Search of every user's memory in a real Chromium: a supervisor searches "allergy", sees Alice's "allergic" turn
highlighted with her name, then "home address" finds Bob's address turn. Screenshot: var/screenshots/search-*."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def said(tenant, assistant, alice, bob, supervisor_user):
    builders.turn(builders.space_of(alice, assistant), user_message="I am allergic to peanuts.")
    builders.turn(builders.space_of(bob, assistant), user_message="My address is 12 Elm Street")


def test_a_supervisor_searches_every_users_memory_and_sees_the_match(page, screenshot, said):
    log_in(page, "supervisor-of-acme", PASSWORD)
    page.goto("/console/acme/")
    page.click("nav >> text=Search")

    page.fill("#id_q", "allergy")
    page.press("#id_q", "Enter")

    result = page.locator("#results .turn")
    expect(result).to_have_count(1)
    expect(result.locator("mark")).to_have_text("allergic")
    expect(result).to_contain_text("Alice")
    assert "q=allergy" in page.url  # htmx pushed the search's own URL
    screenshot(page, "search-allergy")

    page.fill("#id_q", "home address")
    page.press("#id_q", "Enter")
    expect(result).to_have_count(1)
    expect(result).to_contain_text("Bob")
    expect(result.locator("mark")).to_have_text("address")
