""" "What do you remember about me": the end user sees their memory in plain language and governs it.

Each action is tested twice: as plain HTML (a redirect back to the page, with a message) and with HTMX (the page's
body comes back with a note). Each is audited as the end user's own request.
"""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.models.tiers import Tier
from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}
REASON = "requested by the end user"


@pytest.fixture
def logged_in(client, alice):
    client.force_login(alice.account)
    return client


@pytest.fixture
def remembered(space, alice, assistant):
    """Alice's memory with Ava: two profile versions, facts, a topic with two turns and a recent turn."""
    builders.profile(alice, text="Alice lives in York.")
    builders.profile(alice, text="Alice lives in Leeds and likes walking holidays.")
    vegetarian = builders.knowledge(alice, text="Alice is vegetarian.")
    note = builders.knowledge(alice, text="Ava recommended the Time Out Market.", assistant=assistant)
    lisbon = builders.segment_with_pages(
        space, summary="Lisbon holiday in May", messages=["I am going to Lisbon in May", "Is Sintra worth a day?"]
    )
    recent = builders.page(space, user_message="I bake sourdough <b>bread</b>.", assistant_reply="Lovely!")
    return {"vegetarian": vegetarian, "note": note, "lisbon": lisbon, "recent": recent}


def assert_audited(action: str, end_user) -> AuditEntry:
    entry = AuditEntry.objects.get(action=action)
    assert (entry.actor_kind, entry.actor_id, entry.reason) == ("end_user", str(end_user.pk), REASON)
    assert entry.end_user == end_user
    return entry


def test_the_page_shows_profile_facts_topics_and_recent_turns_in_plain_language(logged_in, remembered):
    body = logged_in.get("/chat/ava/memory/").content.decode()

    assert "What Ava remembers about you" in body
    assert "Alice lives in Leeds and likes walking holidays." in body and "Earlier versions (1)" in body
    assert "Alice is vegetarian." in body and "Ava recommended the Time Out Market." in body
    assert "Lisbon holiday in May" in body and "2 turns" in body and "Is Sintra worth a day?" in body
    assert "I bake sourdough &lt;b&gt;bread&lt;/b&gt;." in body and "in the current conversation" in body
    assert 'Memory is <span class="state-on">on</span>' in body
    assert 'action="/chat/ava/memory/export/"' in body


def test_an_end_user_with_no_memory_yet_is_told_so(logged_in):
    body = logged_in.get("/chat/ava/memory/").content.decode()

    assert "Ava doesn't remember anything about you yet." in body


def test_the_page_costs_the_same_queries_however_much_is_remembered(
    logged_in, remembered, space, alice, django_assert_num_queries
):
    # session, user, end user, assistant, space, recent pages, the profile, then a count and a page of rows for
    # each of its earlier versions, the facts and the topics (a topic's own pages are read when it is opened),
    # and the legal hold
    with django_assert_num_queries(14):
        logged_in.get("/chat/ava/memory/")
    builders.segment_with_pages(
        space, summary="Half marathon training", messages=["I signed up for a half marathon", "My knee aches"]
    )
    builders.knowledge(alice, text="Alice runs 15 km a week.")
    builders.page(space, user_message="Another recent turn.")
    with django_assert_num_queries(14):
        logged_in.get("/chat/ava/memory/")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_forgetting_a_turn_deletes_it_and_is_audited(logged_in, remembered, alice, headers):
    page = remembered["recent"]

    response = logged_in.post(f"/chat/ava/memory/turns/{page.id}/forget/", **headers)

    assert not Page.objects.filter(pk=page.pk).exists()
    assert_audited("page.forget", alice)
    assert_changed(logged_in, response, headers, "Forgotten: that turn, and anything taken from it.")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_forgetting_a_topic_deletes_it_with_its_turns(logged_in, remembered, alice, headers):
    segment = remembered["lisbon"]

    response = logged_in.post(f"/chat/ava/memory/topics/{segment.id}/forget/", **headers)

    assert not Segment.objects.filter(pk=segment.pk).exists()
    assert not Page.objects.filter(tier=Tier.MID_TERM).exists()
    assert_audited("segment.forget", alice)
    assert_changed(logged_in, response, headers, "Forgotten: that topic and its turns.")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
@pytest.mark.parametrize("which", ["vegetarian", "note"])
def test_forgetting_a_fact_about_the_user_or_the_assistant_deletes_it(logged_in, remembered, alice, headers, which):
    entry = remembered[which]

    response = logged_in.post(f"/chat/ava/memory/facts/{entry.id}/forget/", **headers)

    assert not KnowledgeEntry.objects.filter(pk=entry.pk).exists()
    assert_audited("knowledge.forget", alice)
    assert_changed(logged_in, response, headers, "Forgotten: that fact.")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_forgetting_the_current_profile_makes_the_previous_version_current(logged_in, remembered, alice, headers):
    current = ProfileVersion.objects.get(end_user=alice, number=2)

    response = logged_in.post(f"/chat/ava/memory/profile/{current.id}/forget/", **headers)

    assert list(ProfileVersion.objects.values_list("text", flat=True)) == ["Alice lives in York."]
    assert_audited("profile_version.forget", alice)
    assert_changed(logged_in, response, headers, "Forgotten: that version of your profile.")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_correcting_a_fact_rewrites_it_and_audits_before_and_after(logged_in, remembered, alice, headers):
    entry = remembered["vegetarian"]

    response = logged_in.post(f"/chat/ava/memory/facts/{entry.id}/correct/", {"text": "Alice is vegan."}, **headers)

    entry.refresh_from_db()
    assert entry.text == "Alice is vegan."
    audit = assert_audited("knowledge.edit", alice)
    assert (audit.before, audit.after) == ("Alice is vegetarian.", "Alice is vegan.")
    assert_changed(logged_in, response, headers, "Corrected: that fact now reads as you wrote it.")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_an_empty_correction_is_refused_with_the_form_open_and_a_reason(logged_in, remembered, headers):
    entry = remembered["vegetarian"]

    response = logged_in.post(f"/chat/ava/memory/facts/{entry.id}/correct/", {"text": "  "}, **headers)

    body = response.content.decode()
    assert response.status_code == (200 if headers else 400)
    assert "Write the corrected fact, or delete it instead." in body
    assert '<details class="correct" open>' in body
    assert ("<html" in body) is not bool(headers)
    entry.refresh_from_db()
    assert entry.text == "Alice is vegetarian."


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_pausing_and_resuming_memory_is_the_end_users_choice_and_audited(logged_in, alice, assistant, headers):
    response = logged_in.post("/chat/ava/memory/pause/", {"paused": "true"}, **headers)

    assert MemorySpace.objects.get(end_user=alice, assistant=assistant).paused
    assert_audited("memory.pause", alice)
    assert_changed(logged_in, response, headers, "Memory is paused: Ava still answers, but keeps only your latest")

    logged_in.post("/chat/ava/memory/pause/", {"paused": "false"}, **headers)

    assert not MemorySpace.objects.get(end_user=alice, assistant=assistant).paused
    assert_audited("memory.resume", alice)


def test_while_paused_the_chat_still_answers_and_says_memory_is_paused(offline, logged_in, alice, assistant):
    logged_in.post("/chat/ava/memory/pause/", {"paused": "true"})

    logged_in.post("/chat/ava/send/", {"message": "Hello", "idempotency_key": "k-1"})

    assert Page.objects.filter(space__end_user=alice).count() == 1
    reply = Page.objects.get(space__end_user=alice).assistant_reply
    assert "I have kept your message" not in reply and "Memory is paused, so I won't keep this message" in reply
    assert "Memory is paused" in logged_in.get("/chat/ava/").content.decode()
    assert "Resume memory" in logged_in.get("/chat/ava/memory/").content.decode()


def assert_changed(client, response, headers, note: str) -> None:
    """HTMX: the page's body with the note; plain HTML: a redirect to the page, which then shows the note."""
    if headers:
        body = response.content.decode()
        assert response.status_code == 200 and body.lstrip().startswith('<div id="memory-body"')
        assert note in body
    else:
        assert response.status_code == 302 and response["Location"] == "/chat/ava/memory/"
        assert note in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_before_deleting_a_turn_the_end_user_sees_what_it_would_remove(logged_in, remembered, headers):
    page = remembered["lisbon"].pages.order_by("seq").first()
    builders.knowledge(page.space.end_user, text="Alice is going to Lisbon in May.", source_pages=[page])

    response = logged_in.get(f"/chat/ava/memory/turns/{page.id}/forget/confirm/", **headers)

    body = response.content.decode()
    assert response.status_code == 200 and "Delete this turn?" in body
    assert "It removes this turn; re-derives 1 topic; deletes 1 fact." in body
    assert ("<html" in body) is not bool(headers)
    assert f'action="/chat/ava/memory/turns/{page.id}/forget/"' in body
    assert Page.objects.filter(pk=page.pk).exists()


def test_the_memory_page_links_each_delete_to_its_confirmation(logged_in, remembered):
    body = logged_in.get("/chat/ava/memory/").content.decode()

    assert f'href="/chat/ava/memory/facts/{remembered["vegetarian"].id}/forget/confirm/"' in body
    assert f'href="/chat/ava/memory/topics/{remembered["lisbon"].id}/forget/confirm/"' in body


def test_a_stale_profile_is_shown_as_being_updated(logged_in, remembered, alice):
    builders.flags_set(ProfileVersion.objects.filter(end_user=alice).order_by("-number").first(), stale=True)

    assert (
        "Being updated after something was deleted or corrected" in logged_in.get("/chat/ava/memory/").content.decode()
    )
