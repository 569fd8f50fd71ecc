"""The end user's chat in a real Chromium: replies appear without a page load, and memory can be seen and deleted."""

from __future__ import annotations

import io

import pytest
from django.conf import settings
from django.core.management import call_command

from chat.offline_reply import OFFLINE_LABEL
from memory.models import AuditEntry, Page
from memory.selectors.forgetting import ForgetImpact
from tests.browser.conftest import SCREENSHOTS, held_request, log_in

pytestmark = pytest.mark.browser


@pytest.fixture
def demo(transactional_db, settings):
    """The demo tenant, offline, with Alice's and Bob's conversations recorded and placed into topics."""
    settings.LLM_BASE_URL = ""
    call_command("demo_seed", stdout=io.StringIO())


def send(page, message: str) -> None:
    turns = page.locator("#conversation > li.chat-turn:not(.chat-turn-pending)").count()
    page.fill("#composer textarea", message)
    page.click("#composer button[type=submit]")
    page.locator("#conversation > li.chat-turn:not(.chat-turn-pending)").nth(turns).wait_for()


def test_an_end_user_chats_sees_the_memory_used_and_deletes_a_memory(demo, page, screenshot):
    log_in(page, "alice", settings.DEMO_PASSWORD)
    page.wait_for_url("**/chat/ava/")  # home sends an end user to the chat, which opens the only assistant
    page.evaluate("window.stillTheSamePage = true")
    held = []
    page.route("**/chat/ava/send/", lambda route: held.append(route))

    page.fill("#composer textarea", "I'm back from Lisbon! The Pena Palace in Sintra was amazing.")
    page.click("#composer button[type=submit]")
    page.wait_for_selector("#turn-pending")
    assert page.locator("#composer textarea").is_disabled() and page.locator("#composer button").is_disabled()
    assert page.locator("#turn-pending .bubble-user").inner_text() == (
        "I'm back from Lisbon! The Pena Palace in Sintra was amazing."
    )
    held_request(page, held).continue_()
    page.unroute("**/chat/ava/send/")
    page.wait_for_selector("#turn-pending", state="detached")
    send(page, "Any tips for my half marathon training? My <b>knee</b> still aches.")

    assert page.evaluate("window.stillTheSamePage") is True  # both replies arrived without a page load
    last = page.locator("#conversation > li.chat-turn").last
    assert "My <b>knee</b> still aches." in last.locator(".bubble-user").inner_text()
    assert last.locator(".bubble-assistant .bubble-text").inner_text().startswith(OFFLINE_LABEL)
    assert Page.objects.filter(space__end_user__external_id="alice", source="chat").count() == 2
    assert page.locator("#composer textarea").input_value() == ""

    # the offline reply answers first from the most relevant turn, told back to the user with its date
    assert "Your left knee sometimes aches after long runs — you told me on" in last.inner_text()
    first_reply = page.locator("#conversation > li.chat-turn").nth(-2)
    first_reply.locator("details.memory-used summary").click()
    used = first_reply.locator("details.memory-used .memory-used-body")
    assert used.is_visible()
    assert "Earlier turns" in used.inner_text() and "you said “Great, I'll book Pena for the Wednesday then.”" in (
        used.inner_text()
    )
    last.locator("details.memory-used summary").click()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    # The window as the end user sees it (the message box stays pinned to its bottom edge)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "chat.png"))

    page.click("text=What Ava remembers")
    page.wait_for_url("**/chat/ava/memory/")
    turn = page.locator("#turns-title + p + ul > li").first
    turn_text = turn.locator(".memory-text").first.inner_text()
    turn.locator("a[data-forget]").click()
    confirm = turn.locator(".forget-confirm .forget-impact")
    confirm.wait_for()
    shown = confirm.inner_text()
    assert shown.startswith("It removes this turn")
    screenshot(page, "remember-forget-confirm")
    turn.locator(".forget-confirm button", has_text="Delete for good").click()
    page.wait_for_selector("text=Forgotten: that turn")
    screenshot(page, "remember")
    # the preview said what the forget did: its audit entry holds the same impact
    done = ForgetImpact(**AuditEntry.objects.get(action="page.forget").detail["impact"])
    assert shown == f"It {done.describe('page')}."

    assert turn_text not in page.locator("#memory-body").inner_text()
    assert not Page.objects.filter(user_message=turn_text.removeprefix("You: ")).exists()


def test_offline_ava_answers_from_what_was_just_said_and_shows_only_that(demo, page):
    log_in(page, "alice", settings.DEMO_PASSWORD)
    page.wait_for_url("**/chat/ava/")

    for message in ("I like kiwis.", "My brother visits next weekend.", "What fruit do I like?"):
        send(page, message)

    last = page.locator("#conversation > li.chat-turn").last
    reply = last.locator(".bubble-assistant .bubble-text").inner_text()
    assert reply.startswith(f"{OFFLINE_LABEL} You like kiwis — you told me on")
    last.locator("details.memory-used summary").click()
    used = last.locator("details.memory-used .memory-used-body").inner_text()
    assert "you said “I like kiwis.”" in used and "brother" not in used


def test_a_topic_on_the_memory_page_loads_its_turns_when_opened(demo, page):
    log_in(page, "alice", settings.DEMO_PASSWORD)
    page.goto(page.url.split("/chat/")[0] + "/chat/ava/memory/")
    topic = page.locator("#topics-title ~ ul > li").first
    assert topic.locator(".topic-turns a").count() == 1  # not loaded yet: a link, which works without JavaScript

    topic.locator("details.earlier summary").click()

    topic.locator("ul.topic-turns > li").first.wait_for()
    assert topic.locator("ul.topic-turns > li .memory-text").first.inner_text().startswith("You:")
