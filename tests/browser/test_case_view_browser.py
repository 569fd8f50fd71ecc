"""The console's case view and audit log in a real Chromium: a supervisor moves between a user's tabs (the heat
chart, and plotly.js with it, loads only when its section opens), searches the user's memory and follows a chat reply
to the fact it used; a data-protection officer filters the audit log and gets the same view back after a reload.
Screenshots: var/screenshots/case-*."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from playwright.sync_api import expect

from chat.services import reply_generate
from memory.models import KnowledgeEntry
from memory.services.audit import Actor
from memory.services.governance import memory_flag_set
from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def case(tenant, assistant, alice, supervisor_user, dpo_user):
    """Alice's memory with a peanut allergy among it, a chat reply that used it, and a change she made herself."""
    builders.conversations(alice, assistant, capture=lambda execute=True: nullcontext())
    fact = builders.knowledge(alice, text="The user is allergic to peanuts.")
    reply = reply_generate(
        end_user=alice, assistant=assistant, message="Am I allergic to peanuts?", idempotency_key="k"
    )
    memory_flag_set(item=fact, flag="pinned", value=True, actor=Actor.end_user(alice), reason="Please remember this")
    return alice, fact, reply


def test_a_supervisor_moves_between_tabs_searches_and_follows_a_reply_to_its_memory(page, screenshot, case):
    alice, fact, reply = case
    plotly_requests: list[str] = []
    page.on("request", lambda request: plotly_requests.append(request.url) if "plotly" in request.url else None)
    log_in(page, "supervisor-of-acme", PASSWORD)

    page.goto(f"/console/acme/users/{alice.pk}/")
    expect(page.locator(".case-tabs [aria-selected=true]")).to_have_attribute("data-tab", "short-term")
    expect(page.locator("#tab-short-term .turn")).to_have_count(7)
    assert plotly_requests == [] and page.evaluate("typeof window.Plotly") == "undefined"

    page.click(".case-tabs a[data-tab=mid-term]")
    expect(page.locator("#tab-mid-term tbody tr").first).to_be_visible()
    assert page.url.endswith("?tab=mid-term&assistant=ava")  # htmx pushed the tab's own URL
    assert plotly_requests == []  # the chart's section is closed
    page.click(".chart-section summary")
    page.wait_for_selector("#user-heat .main-svg")  # drawn once plots.js fetched plotly.js
    assert len(plotly_requests) == 1
    screenshot(page, "case-mid-term")

    page.click(".case-tabs a[data-tab=long-term]")
    expect(page.locator("#tab-long-term")).to_contain_text("The user is allergic to peanuts.")
    page.go_back()
    page.wait_for_selector("#tab-mid-term")

    page.fill("#id_q", "peanut")
    page.press("#id_q", "Enter")
    expect(page.locator("#tab-search h2")).to_contain_text("Search results for “peanut”")
    expect(page.locator("#tab-search .search-hits a", has_text="allergic to peanuts")).to_be_visible()
    expect(page.locator("#tab-search .turn", has_text="Am I allergic to peanuts?")).to_be_visible()
    assert "q=peanut" in page.url
    screenshot(page, "case-search")

    page.click(".case-tabs a[data-tab=chats]")
    turn = page.locator(f"#reply-{reply.reply.pk}")
    expect(turn).to_contain_text("Am I allergic to peanuts?")
    screenshot(page, "case-chats")
    turn.locator(".used-items a", has_text="allergic to peanuts").click()
    page.wait_for_url(f"**/console/acme/knowledge/{fact.pk}/")
    expect(page.locator("h1")).to_be_visible()


def test_a_case_tab_works_as_a_plain_link_without_javascript(chromium, live_server, case):
    alice, fact, _ = case
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    tab = context.new_page()
    log_in(tab, "supervisor-of-acme", PASSWORD)

    tab.goto(f"/console/acme/users/{alice.pk}/")
    tab.click(".case-tabs a[data-tab=long-term]")

    assert "tab=long-term" in tab.url
    expect(tab.locator("#tab-long-term")).to_contain_text(fact.text)
    context.close()


def test_a_dpo_filters_the_audit_log_and_a_reload_keeps_the_filter(page, screenshot, case):
    alice, fact, _ = case
    log_in(page, "dpo-of-acme", PASSWORD)
    page.goto(f"/console/acme/users/{alice.pk}/")  # an operator's read, which "Hide reads" hides
    page.goto("/console/acme/audit/")

    page.fill("#id_since", "2026-03-02")
    page.fill("#id_until", "2026-03-01")
    page.click(".filters button[type=submit]")
    expect(page.locator("#filter-errors")).to_contain_text("is before “From”")
    screenshot(page, "case-audit-date-error")

    page.fill("#id_since", "")
    page.fill("#id_until", "")
    page.fill("#id_actor", "alice")
    page.check("#id_hide_reads")
    page.click(".filters button[type=submit]")
    expect(page.locator("#filter-errors")).to_have_count(0)
    rows = page.locator("#results tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("knowledge.pin")
    expect(rows.first).to_contain_text("Alice")
    assert "actor=alice" in page.url and "hide_reads=on" in page.url
    screenshot(page, "case-audit-filtered")

    page.reload()
    expect(page.locator("#id_actor")).to_have_value("alice")
    expect(page.locator("#id_hide_reads")).to_be_checked()
    expect(page.locator("#results tbody tr")).to_have_count(1)

    page.click(".filters a:has-text('Clear')")
    expect(page.locator("#results tbody tr")).not_to_have_count(1)
    assert KnowledgeEntry.objects.get(pk=fact.pk).pinned
