"""Where the keyboard focus goes, in a real Chromium: a tab switched with the keyboard (or the mouse) puts the focus
in the panel htmx loaded, and the action dialog keeps the focus inside it until Escape gives it back."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from playwright.sync_api import expect

from memory.services.tenancy import assistant_create
from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def remembered(settings, tenant, assistant, alice, supervisor_user):
    settings.LLM_BASE_URL = ""
    builders.conversations(alice, assistant, capture=lambda execute=True: nullcontext())
    return alice


def focused(tab) -> str:
    """What has the focus: its id, else its role and text."""
    return tab.evaluate(
        "(e => e.id || (e.getAttribute('role') || e.tagName.toLowerCase()) + ': ' + e.textContent.trim())"
        "(document.activeElement)"
    )


def focus_is_in(tab, selector: str) -> bool:
    return tab.evaluate("s => !!document.activeElement.closest(s)", selector)


def test_a_tab_switched_with_the_keyboard_puts_the_focus_in_the_loaded_panel(page, remembered):
    log_in(page, "supervisor-of-acme", PASSWORD)
    page.goto(f"/console/acme/users/{remembered.pk}/")
    tabs = page.locator(".case-tabs[role=tablist] [role=tab]")
    expect(tabs).to_have_count(4)  # a supervisor has no audit tab
    expect(page.locator("[role=tab][aria-selected=true]")).to_have_attribute("aria-controls", "tab-short-term")
    expect(page.locator("#tab-short-term")).to_have_attribute("role", "tabpanel")

    for _ in range(100):  # Tab reaches the tablist once, on its selected tab
        page.keyboard.press("Tab")
        if focus_is_in(page, "[role=tablist]"):
            break
    else:
        pytest.fail("the tabs cannot be reached with Tab")
    assert focused(page) == "case-tab-short-term"

    # the arrow keys move along the tabs without loading them; Enter opens one and the focus lands in its panel
    page.evaluate("window.stillTheSamePage = true")
    page.keyboard.press("ArrowRight")
    assert focused(page) == "case-tab-mid-term"
    page.keyboard.press("Enter")
    expect(page.locator("#tab-mid-term")).to_be_focused()
    expect(page.locator("#case-tab-mid-term")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#case-tab-mid-term")).to_have_attribute("tabindex", "0")
    expect(page.locator("#case-tab-short-term")).to_have_attribute("aria-selected", "false")
    assert "tab=mid-term" in page.url and page.evaluate("window.stillTheSamePage") is True

    # Shift+Tab goes back to the selected tab; Space opens the next one, and Tab goes on inside its panel
    page.keyboard.press("Shift+Tab")
    assert focused(page) == "case-tab-mid-term"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")
    expect(page.locator("#tab-long-term")).to_be_focused()
    expect(page.locator("#tab-long-term")).to_have_attribute("aria-labelledby", "case-tab-long-term")
    page.keyboard.press("Tab")
    assert focus_is_in(page, "#tab-long-term"), focused(page)

    # End and Home go to the last and the first tab; a click puts the focus in the panel too
    page.locator("#case-tab-long-term").focus()
    page.keyboard.press("End")
    assert focused(page) == "case-tab-chats"
    page.keyboard.press("Home")
    assert focused(page) == "case-tab-short-term"
    page.click("#case-tab-chats")
    expect(page.locator("#tab-chats")).to_be_focused()


def test_the_action_dialog_keeps_the_focus_inside_until_escape(page, remembered):
    log_in(page, "supervisor-of-acme", PASSWORD)
    page.goto(f"/console/acme/users/{remembered.pk}/?tab=long-term")
    pin = page.locator("#tab-long-term [data-action=pin]").first
    pin.focus()
    page.keyboard.press("Enter")
    reason = page.locator("#modal .modal textarea[name=reason]")
    expect(reason).to_be_focused()

    stops = page.locator("#modal .modal").evaluate(
        "m => [...m.querySelectorAll('a[href], button, textarea, input:not([type=hidden]), select')].length"
    )
    for key in ["Tab"] * (stops + 2) + ["Shift+Tab"] * (stops + 2):
        page.keyboard.press(key)
        assert focus_is_in(page, "#modal .modal"), f"{key} left the dialog for {focused(page)}"

    # a click on the backdrop does not leave the focus behind the dialog either
    page.mouse.click(5, 5)
    page.keyboard.press("Tab")
    assert focus_is_in(page, "#modal .modal"), focused(page)

    page.keyboard.press("Escape")
    expect(page.locator("#modal .modal")).to_have_count(0)
    expect(pin).to_be_focused()


def test_the_assistant_is_chosen_with_the_keyboard_and_a_button_not_on_change(page, remembered, tenant):
    other = assistant_create(tenant=tenant, external_id="max", name="Max")
    builders.turn(builders.space_of(remembered, other), user_message="Max, remind me of the dentist.")
    log_in(page, "supervisor-of-acme", PASSWORD)
    page.goto(f"/console/acme/users/{remembered.pk}/?assistant=ava")

    page.focus("#id_assistant")
    page.keyboard.press("ArrowDown")  # choosing an option loads nothing by itself
    assert "assistant=ava" in page.url
    page.keyboard.press("Tab")
    with page.expect_navigation():
        page.keyboard.press("Enter")  # the Show button
    assert "assistant=max" in page.url
    expect(page.locator("#tab-short-term")).to_contain_text("remind me of the dentist")
