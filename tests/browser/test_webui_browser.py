"""The web UI as people use it, in a real Chromium: on a phone, with a failing network, with the keyboard only, and
through axe-core's accessibility checks on every page type for every role. Screenshots: var/screenshots/webui-*."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memory.models import ApiToken, KnowledgeEntry, Page, ProfileVersion, ReviewState, Segment
from memory.services.audit import Actor
from memory.services.data_subject_requests import data_subject_request_open
from memory.services.validity import escalation_open
from tests import builders
from tests.browser.conftest import held_request, log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE, TABLET, DESKTOP = 390, 768, 1280


def _no_capture(execute: bool = True):
    """With a transactional live server, on-commit callbacks run by themselves."""
    return nullcontext()


@pytest.fixture
def memory(settings, tenant, assistant, alice, bob, agent_user, supervisor_user, dpo_user, admin_user):
    """Acme offline, with Alice's memory in every tier (and Bob's, smaller), and an operator of each role."""
    settings.LLM_BASE_URL = ""
    builders.conversations(alice, assistant, capture=_no_capture)
    builders.conversations(bob, assistant, capture=_no_capture, rounds=1, promote=False)
    return alice


@pytest.fixture
def new_tab(chromium, live_server):
    """Open tabs of their own (cookies, viewport) on the one browser and the one live server; all closed after.

    Fails the test if the browser reports anything the Content-Security-Policy blocked (an inline handler, say).
    """
    contexts = []
    blocked: list[str] = []

    def open_tab(width: int = DESKTOP):
        context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": 844})
        context.set_default_timeout(15_000)
        contexts.append(context)
        tab = context.new_page()
        tab.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
        return tab

    yield open_tab
    for context in contexts:
        context.close()
    assert blocked == [], blocked


@pytest.fixture
def casework(memory, tenant, agent_user, dpo_user):
    """The pages of daily casework with something on them: a data-subject request, a flag in the escalations queue,
    and a profile version awaiting review (so the review page shows its diff against the current profile)."""
    request = data_subject_request_open(
        tenant=tenant,
        kind="erasure",
        external_id="alice",
        channel="email",
        requester="Alice, alice@example.org",
        received_at=timezone.now() - timedelta(days=3),
        actor=Actor.operator(dpo_user),
        identity_check="Replied from the address on file",
    )
    turn = Page.objects.filter(space__end_user=memory).first()
    escalation_open(tenant=tenant, item=turn, actor=Actor.operator(agent_user), note="This address is out of date")
    lines = ["The user lives in Porto.", "The user is allergic to peanuts."]
    lines += [f"Detail {i} of the profile." for i in range(12)]  # long enough for its quote to scroll
    pending = builders.profile(memory, text="\n".join(lines))
    ProfileVersion.objects.filter(pk=pending.pk).update(review_state=ReviewState.PENDING)
    return request


def page_width(tab) -> int:
    return tab.evaluate("document.documentElement.scrollWidth")


def serious_violations(tab) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each (rule, impact, first target)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(tab)
    return [
        f"{tab.url}: {v['id']} ({v['impact']}) at {v['nodes'][0]['target']}: {v['help']}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def overflowing(tab, width: int) -> str:
    """The innermost elements that reach past the right edge of a `width`-px window, to say what to fix."""
    return tab.evaluate(
        """width => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > width + 1)
            .filter(e => ![...e.children].some(c => c.getBoundingClientRect().right > width + 1))
            .slice(0, 3).map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')).join(', ')""",
        width,
    )


def console_paths(alice, request) -> dict[str, str]:
    """One URL per console page type (which answer 403 depends on the role)."""
    segment = Segment.objects.filter(space__end_user=alice).first()
    page = Page.objects.filter(space__end_user=alice).first()
    fact = KnowledgeEntry.objects.filter(end_user=alice).first()
    return {
        "home": "/",
        "overview": "/console/acme/",
        "users": "/console/acme/users/",
        "user": f"/console/acme/users/{alice.pk}/",
        "user mid-term": f"/console/acme/users/{alice.pk}/?tab=mid-term",
        "user long-term": f"/console/acme/users/{alice.pk}/?tab=long-term",
        "user chats": f"/console/acme/users/{alice.pk}/?tab=chats",
        "user audit": f"/console/acme/users/{alice.pk}/?tab=audit",
        "user search": f"/console/acme/users/{alice.pk}/?q=Lisbon",
        "import": f"/console/acme/users/{alice.pk}/import/",
        "segment": f"/console/acme/segments/{segment.pk}/",
        "page": f"/console/acme/pages/{page.pk}/",
        "knowledge": f"/console/acme/knowledge/{fact.pk}/",
        "audit": "/console/acme/audit/",
        "gdpr": "/console/acme/gdpr/",
        "tokens": "/console/acme/tokens/",
        "retention": "/console/acme/retention/",
        "personal data": "/console/acme/personal-data/",
        "review": "/console/acme/review/",
        "team": "/console/acme/team/",
        "requests": "/console/acme/requests/",
        "request new": "/console/acme/requests/new/",
        "request": f"/console/acme/requests/{request.pk}/",
        "escalations": "/console/acme/escalations/",
        "search": "/console/acme/search/?q=gardens",  # stems to "garden"
    }


def test_the_chat_fits_a_phone_and_a_failed_send_is_retried_and_stored_once(memory, new_tab, screenshot):
    tab = new_tab(PHONE)
    log_in(tab, "alice", PASSWORD)
    tab.goto("/chat/ava/")
    assert page_width(tab) <= PHONE

    # the account menu folds behind a toggle that opens with the keyboard
    assert not tab.locator(".user-menu").is_visible()
    tab.focus(".site-menu-toggle summary")
    tab.keyboard.press("Enter")
    expect(tab.locator(".user-menu button", has_text="Log out")).to_be_visible()
    assert page_width(tab) <= PHONE
    tab.keyboard.press("Enter")

    box = tab.locator("#composer textarea")
    assert box.get_attribute("maxlength") == "64000"
    box.fill("I moved to Porto last month.")
    expect(tab.locator("#composer-count")).to_have_text("28 / 64,000 characters")

    # the pending reply shows above the message box, not behind it
    held = []
    tab.route("**/chat/ava/send/", lambda route: held.append(route))
    tab.keyboard.press("Enter")  # focus is in the box: Enter sends
    tab.wait_for_selector("#turn-pending .bubble-typing")
    typing = tab.locator("#turn-pending .bubble-typing").bounding_box()
    composer = tab.locator("#composer .composer-row").bounding_box()
    assert typing["y"] + typing["height"] <= composer["y"]
    screenshot(tab, "webui-chat-pending-phone")

    # the connection fails: the message stays with an error and a Retry button; nothing is stored
    held_request(tab, held).abort()
    retry = tab.locator("#turn-pending .send-error button", has_text="Retry")
    expect(retry).to_be_visible()
    assert "the connection failed" in tab.locator("#turn-pending .send-error").inner_text()
    assert Page.objects.filter(space__end_user=memory, user_message="I moved to Porto last month.").count() == 0
    assert page_width(tab) <= PHONE
    screenshot(tab, "webui-chat-failed-phone")

    tab.unroute("**/chat/ava/send/")
    retry.click()
    last = tab.locator("#conversation > li.chat-turn:not(.chat-turn-pending)").last
    expect(last.locator(".bubble-user")).to_contain_text("I moved to Porto last month.")
    expect(tab.locator("#turn-pending")).to_have_count(0)
    assert Page.objects.filter(space__end_user=memory, user_message="I moved to Porto last month.").count() == 1
    assert last.locator(".bubble-text").first.get_attribute("dir") == "auto"
    expect(tab.locator("#composer-count")).to_have_text("0 / 64,000 characters")
    assert page_width(tab) <= PHONE
    screenshot(tab, "webui-chat-phone")

    tab.goto("/chat/ava/memory/")
    assert page_width(tab) <= PHONE
    for name in ("Pause memory", "Download my memory"):
        button = tab.locator("button", has_text=name).bounding_box()
        assert button["x"] >= 0 and button["x"] + button["width"] <= PHONE
    screenshot(tab, "webui-memory-phone")

    # "Keep it" closes the question in place (no page load) and gives the focus back to its Delete button
    tab.evaluate("window.stillTheSamePage = true")
    delete = tab.locator("#turns-title + p + ul > li").first.locator("a[data-forget]")
    delete.click()
    keep = tab.locator(".forget-confirm a", has_text="Keep it")
    expect(keep).to_be_visible()
    keep.click()
    expect(tab.locator(".forget-confirm")).to_have_count(0)
    assert tab.evaluate("window.stillTheSamePage") is True
    assert delete.evaluate("element => element === document.activeElement")


def test_a_retry_of_a_send_whose_answer_was_lost_shows_the_turn_stored_the_first_time(memory, new_tab):
    tab = new_tab(DESKTOP)
    log_in(tab, "alice", PASSWORD)
    tab.goto("/chat/ava/")

    # a server error: the message stays, with the status and Retry
    tab.route("**/chat/ava/send/", lambda route: route.fulfill(status=502, body="Bad gateway"))
    tab.fill("#composer textarea", "Book me a table at Tasca.")
    tab.click("#composer button[type=submit]")
    retry = tab.locator("#turn-pending .send-error button", has_text="Retry")
    expect(retry).to_be_visible()
    assert "the server answered with an error (502)" in tab.locator("#turn-pending .send-error").inner_text()
    tab.unroute("**/chat/ava/send/")

    # the server stores the turn, but its answer never reaches the page
    tab.route("**/chat/ava/send/", lambda route: (route.fetch(), route.abort()))
    retry.click()
    expect(tab.locator("#turn-pending .send-error", has_text="the connection failed")).to_be_visible()
    assert Page.objects.filter(space__end_user=memory, user_message="Book me a table at Tasca.").count() == 1

    tab.unroute("**/chat/ava/send/")
    retry.click()

    expect(tab.locator("#conversation .bubble-user", has_text="Book me a table at Tasca.")).to_have_count(1)
    expect(tab.locator("#turn-pending")).to_have_count(0)
    assert Page.objects.filter(space__end_user=memory, user_message="Book me a table at Tasca.").count() == 1


def test_an_admin_creates_a_token_with_inline_scopes_and_copies_it(memory, new_tab, screenshot):
    tab = new_tab(DESKTOP)
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(tab, "admin-of-acme", PASSWORD)
    tab.goto("/console/acme/tokens/")

    for scope in ("read", "write"):
        box = tab.locator(f".checkbox-list label:has-text('{scope}') input").bounding_box()
        label = tab.locator(".checkbox-list label", has_text=scope).bounding_box()
        assert abs((box["y"] + box["height"] / 2) - (label["y"] + label["height"] / 2)) < 4  # side by side
    tab.fill("#id_name", "helpdesk")
    tab.check(".checkbox-list label:has-text('read') input")
    tab.click("#token-create button[type=submit]")

    copy = tab.locator("#token-create button", has_text="Copy")
    expect(copy).to_be_visible()
    secret = tab.locator("#token-secret").input_value()
    assert secret.startswith("mos_") and tab.locator("#token-secret").get_attribute("readonly") is not None
    copy.click()
    expect(tab.locator(".copy-status")).to_have_text("Copied.")
    assert tab.evaluate("navigator.clipboard.readText()") == secret
    assert ApiToken.objects.get(name="helpdesk").scopes == ["read"]
    screenshot(tab, "webui-token-copied")


def test_console_actions_work_with_the_keyboard_alone_and_show_where_the_focus_is(memory, new_tab):
    tab = new_tab(DESKTOP)
    log_in(tab, "supervisor-of-acme", PASSWORD)
    tab.goto(f"/console/acme/users/{memory.pk}/?tab=long-term")

    tab.keyboard.press("Tab")
    assert tab.evaluate("document.activeElement.textContent") == "Skip to the content"
    outline = tab.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # a visible focus ring

    pin = tab.locator("#tab-long-term [data-action=pin]").first
    fact = KnowledgeEntry.objects.filter(end_user=memory, pinned=False).count()
    for _ in range(200):  # Tab until the first Pin button has the focus
        tab.keyboard.press("Tab")
        if pin.evaluate("element => element === document.activeElement"):
            break
    else:
        pytest.fail("the Pin button cannot be reached with Tab")
    assert pin.evaluate("element => element.matches(':focus-visible')")
    tab.keyboard.press("Enter")
    reason = tab.locator(".modal textarea[name=reason]")
    expect(reason).to_be_focused()  # the dialog takes the focus
    tab.keyboard.press("Escape")  # and Escape closes it, giving the focus back
    expect(reason).to_have_count(0)
    assert pin.evaluate("element => element === document.activeElement")
    tab.keyboard.press("Enter")
    expect(reason).to_be_focused()
    tab.keyboard.type("Asked on the phone")
    tab.keyboard.press("Tab")
    with tab.expect_navigation():
        tab.keyboard.press("Enter")
    assert KnowledgeEntry.objects.filter(end_user=memory, pinned=False).count() == fact - 1


def test_the_memory_page_pages_its_topics_on_a_phone_with_htmx_and_as_plain_links(
    memory, assistant, chromium, live_server, new_tab, screenshot
):
    space = builders.space_of(memory, assistant)
    for i in range(15):  # a page and a half of each (10 a page)
        builders.segment(space, summary=f"Paged topic {i:02d}", last_touched_at=builders.T0 + i * builders.MINUTE)
        builders.knowledge(memory, text=f"Paged fact {i:02d}.")
    tab = new_tab(PHONE)
    log_in(tab, "alice", PASSWORD)
    tab.goto("/chat/ava/memory/")
    topics = tab.locator("nav[aria-label='Pages of topics']")
    assert page_width(tab) <= PHONE and serious_violations(tab) == []
    expect(tab.get_by_text("Paged topic 00")).to_have_count(0)

    # with JavaScript, htmx swaps the page's body in place and puts the page in the address bar
    tab.evaluate("window.stillTheSamePage = true")
    topics.get_by_role("link", name="Older topics →").click()
    expect(tab.get_by_text("Paged topic 00")).to_be_visible()
    assert "topics=2" in tab.url and tab.evaluate("window.stillTheSamePage") is True
    expect(topics.locator("[aria-current=page]")).to_have_text("2")
    expect(topics.locator("[aria-current=page]")).to_be_focused()  # "Older" is gone: the focus stays in the pager
    assert page_width(tab) <= PHONE and serious_violations(tab) == []
    screenshot(tab, "webui-memory-paged-phone")

    # from the keyboard, a page number keeps the focus in the pager too
    topics.get_by_role("link", name="Page 1").focus()
    tab.keyboard.press("Enter")
    expect(tab.get_by_text("Paged topic 14")).to_be_visible()
    expect(topics.locator("[aria-current=page]")).to_have_text("1")
    expect(topics.locator("[aria-current=page]")).to_be_focused()

    # without it, the same pager is plain links
    context = chromium.new_context(base_url=live_server.url, java_script_enabled=False)
    plain = context.new_page()
    log_in(plain, "alice", PASSWORD)
    plain.goto("/chat/ava/memory/")
    plain.locator("nav[aria-label='Pages of topics']").get_by_role("link", name="Page 2").click()
    expect(plain.get_by_text("Paged topic 00")).to_be_visible()
    assert "topics=2" in plain.url
    context.close()


def test_every_page_type_fits_each_screen_and_passes_axe_for_every_role(memory, casework, new_tab, screenshot):
    paths = console_paths(memory, casework)
    violations: list[str] = []
    too_wide: list[str] = []

    def check(tab, path: str, shot: str = "") -> None:
        for width in (PHONE, TABLET, DESKTOP):
            tab.set_viewport_size({"width": width, "height": 844})
            if page_width(tab) > width:
                too_wide.append(f"{path} is {page_width(tab)} px wide at {width} px: {overflowing(tab, width)}")
            if shot and width == PHONE:
                screenshot(tab, f"webui-{shot}-phone")
        violations.extend(serious_violations(tab))

    tab = new_tab(DESKTOP)
    tab.goto("/accounts/login/")
    check(tab, "/accounts/login/")
    log_in(tab, "alice", PASSWORD)
    topic = Segment.objects.filter(space__end_user=memory).first()
    for path in (
        "/chat/ava/",
        "/chat/ava/memory/",
        "/chat/ava/memory/?q=Lisbon",
        f"/chat/ava/memory/topics/{topic.pk}/",
    ):
        tab.goto(path)
        check(tab, path)

    statuses = {}
    for username in ("agent-of-acme", "supervisor-of-acme", "dpo-of-acme", "admin-of-acme"):
        tab = new_tab(DESKTOP)
        log_in(tab, username, PASSWORD)
        for name, path in paths.items():
            response = tab.goto(path)
            statuses[username, name] = response.status
            if name in ("review", "search", "escalations", "requests") and response.status == 200:
                shown = {"review": ".review-diff", "search": ".search-results li", "escalations": "[id^=escalation-]"}
                assert tab.locator(shown.get(name, "#request-list tbody tr")).count() > 0, f"{path} shows nothing"
            shots = {("agent-of-acme", "audit"): "403", ("admin-of-acme", "users"): "users"}
            check(tab, path, shots.get((username, name), ""))

    assert statuses["agent-of-acme", "audit"] == statuses["dpo-of-acme", "tokens"] == 403  # the 403 page, too
    assert statuses["admin-of-acme", "tokens"] == statuses["dpo-of-acme", "gdpr"] == 200
    assert statuses["admin-of-acme", "team"] == statuses["dpo-of-acme", "request"] == 200
    assert statuses["supervisor-of-acme", "escalations"] == statuses["agent-of-acme", "search"] == 200
    assert {"too wide": too_wide, "axe": violations} == {"too wide": [], "axe": []}  # both, to say all to fix
