"""On a phone (390 px), the confirmation of an action taken far down a page shows on the screen, at its bottom,
not at the top of a page scrolled away from. Screenshot: var/screenshots/messages-phone.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE, HEIGHT = 390, 844


@pytest.fixture
def many_facts(settings, alice, assistant):
    settings.LLM_BASE_URL = ""
    builders.space_of(alice, assistant)
    for number in range(12):
        builders.knowledge(alice, text=f"The user likes walk number {number}.")


def test_forgetting_the_last_fact_on_a_phone_shows_the_confirmation_on_screen(
    chromium, live_server, many_facts, screenshot
):
    context = chromium.new_context(base_url=live_server.url, viewport={"width": PHONE, "height": HEIGHT})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    try:
        log_in(tab, "alice", PASSWORD)
        tab.goto("/chat/ava/memory/")
        last = tab.locator(".memory-item[id^=fact-]").last
        last.scroll_into_view_if_needed()
        last.locator("[data-forget=facts]").click()
        tab.locator("button:has-text('Delete for good')").click()

        note = tab.locator(".memory-body > .message")
        expect(note).to_contain_text("Forgotten")
        box = note.bounding_box()
        assert tab.evaluate("window.scrollY") > 0  # the page stayed scrolled down, where the action was
        assert box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT
        screenshot(tab, "messages-phone")
    finally:
        context.close()
