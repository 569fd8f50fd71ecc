"""Flags and the team in a real Chromium: an agent flags Alice's old-address turn, the supervisor sees it counted
on the overview and resolves it from the queue by marking the turn outdated; a tenant admin makes the agent a
supervisor and the agent's next page has the new rights. Screenshots: var/screenshots/team-*."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.models import AuditEntry, Escalation, Membership, Page
from tests import builders
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OLD_ADDRESS = "I live at 12 Old Street, Leeds."


@pytest.fixture
def old_address_turn(tenant, assistant, alice, agent_user, supervisor_user, admin_user) -> Page:
    space = builders.space_of(alice, assistant)
    builders.page(space, user_message="Hello, I need help with my order.")
    return builders.page(space, user_message=OLD_ADDRESS, assistant_reply="Thanks, I have noted your address.")


@pytest.fixture
def tab_for(chromium, live_server):
    """A new browser context (own cookies) logged in as `username`."""
    contexts = []

    def open_as(username: str):
        context = chromium.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        contexts.append(context)
        tab = context.new_page()
        log_in(tab, username, PASSWORD)
        return tab

    yield open_as
    for context in contexts:
        context.close()


def _modal_submit(tab) -> None:
    with tab.expect_navigation():
        tab.click(".modal button[type=submit]")


def test_an_agent_flags_the_old_address_and_the_supervisor_resolves_it_from_the_queue(
    tab_for, screenshot, old_address_turn
):
    agent = tab_for("agent-of-acme")
    agent.goto(f"/console/acme/pages/{old_address_turn.pk}/")
    agent.click("[data-action=flag]")
    agent.fill(".modal textarea[name=note]", "Alice says she moved to Porto last month")
    _modal_submit(agent)
    expect(agent.locator(".message")).to_contain_text("Flagged")
    escalation = Escalation.objects.get()
    assert (escalation.target_type, escalation.target_id) == ("page", old_address_turn.pk)

    supervisor = tab_for("supervisor-of-acme")
    supervisor.goto("/console/acme/")
    expect(supervisor.locator("#escalation-summary .tile-value").first).to_have_text("1")
    supervisor.click("#escalation-summary a:has-text('Open the queue')")
    row = supervisor.locator(f"#escalation-{escalation.pk}")
    expect(row).to_contain_text(OLD_ADDRESS)
    screenshot(supervisor, "team-escalation-queue")
    row.locator("[data-action=outdated]").click()
    expect(supervisor.locator(".modal .escalation-settles")).to_contain_text("moved to Porto")
    supervisor.fill(".modal input[name=replacement]", "Porto")
    supervisor.fill(".modal textarea[name=reason]", "Alice confirmed the move")
    _modal_submit(supervisor)

    expect(supervisor.locator(".message")).to_contain_text("The flag is resolved")
    assert supervisor.url.endswith("/console/acme/escalations/")
    expect(supervisor.locator(f"#escalation-{escalation.pk}")).to_have_count(0)
    escalation.refresh_from_db()
    old_address_turn.refresh_from_db()
    assert escalation.state == "resolved" and escalation.resolution == "Mark outdated: Alice confirmed the move"
    assert old_address_turn.valid_to is not None and old_address_turn.outdated_note == "Porto"
    assert AuditEntry.objects.get(action="escalation.resolve").detail == {"escalation": escalation.pk,
                                                                          "action": "outdated"}  # fmt: skip


def test_an_admin_makes_the_agent_a_supervisor_and_their_next_page_has_the_rights(
    tab_for, screenshot, old_address_turn, agent_user
):
    agent = tab_for("agent-of-acme")
    refused = agent.goto("/console/acme/escalations/")
    assert refused.status == 403
    expect(agent.locator(".role-admins")).to_contain_text("admin-of-acme")

    admin = tab_for("admin-of-acme")
    admin.goto("/console/acme/")
    admin.click("a.tab:has-text('Team')")
    admin.select_option(f"#role-{agent_user.pk}", "supervisor")
    admin.locator(f"#operator-{agent_user.pk} button:has-text('Change role')").click()
    expect(admin.locator("#team .message")).to_contain_text("The role was changed")
    expect(admin.locator(f"#role-{agent_user.pk}")).to_have_value("supervisor")
    screenshot(admin, "team-page")
    assert Membership.objects.get(user=agent_user).role == "supervisor"

    allowed = agent.goto("/console/acme/escalations/")
    assert allowed.status == 200
    expect(agent.locator("h1")).to_have_text("Escalations")
    agent.goto(f"/console/acme/pages/{old_address_turn.pk}/")
    expect(agent.locator("[data-action=outdated]")).to_be_visible()
