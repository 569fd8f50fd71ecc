"""Coffee, then tea, in a real Chromium: the reply answers tea, the earlier drink is named as earlier, and once memory
has learnt both facts the end user's memory page shows the coffee as what used to be true, with its date."""

from __future__ import annotations

import io

import pytest
from django.conf import settings
from django.core.management import call_command

from chat.offline_reply import OFFLINE_LABEL
from memory.models import KnowledgeEntry, MemorySpace
from tests import builders
from tests.browser.conftest import log_in
from tests.browser.test_chat_browser import send

pytestmark = pytest.mark.browser

COFFEE = "I drink a flat white every morning."
TEA = "Actually I've given up coffee, I now drink green tea."


@pytest.fixture
def demo(transactional_db, settings):
    settings.LLM_BASE_URL = ""
    call_command("demo_seed", stdout=io.StringIO())


def test_the_reply_answers_with_the_current_drink_and_the_memory_page_shows_the_earlier_one(demo, page):
    log_in(page, "alice", settings.DEMO_PASSWORD)
    page.wait_for_url("**/chat/ava/")
    send(page, COFFEE)
    send(page, TEA)
    send(page, "What do I drink in the morning?")

    reply = page.locator("#conversation > li.chat-turn").last.locator(".bubble-assistant .bubble-text").inner_text()
    answer, *rest = reply.splitlines()
    assert answer.startswith(OFFLINE_LABEL) and "green tea" in answer and "flat white" not in answer
    assert any(line.startswith("- Earlier (no longer current)") and "flat white" in line for line in rest)

    # memory learns both facts (as it does once the topic is hot); the later one replaces the earlier
    space = MemorySpace.objects.get(end_user__external_id="alice", assistant__external_id="ava")
    builders.stm_push_out_now(space)
    builders.segments_promote(space)
    coffee = KnowledgeEntry.objects.get(end_user=space.end_user, text__icontains="flat white")
    assert coffee.superseded_by is not None and "green tea" in coffee.superseded_by.text

    page.click("text=What Ava remembers")
    page.wait_for_url("**/chat/ava/memory/")
    until = f"{coffee.valid_to.day} {coffee.valid_to:%b %Y}"
    fact = page.locator(".memory-text", has_text="flat white").filter(has_text="Used to:")
    assert fact.count() == 1 and fact.inner_text().endswith(f"until {until}")
