""" "No longer true" on the end user's memory page: a fact or a turn is kept as "used to …, until <date>" with what is
true now, can be made true again, is audited as the end user's request; others' items are 404. Each action is tested
as plain HTML (a redirect) and with HTMX (the page's body)."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, Page
from memory.services.audit import Actor
from memory.services.validity import knowledge_mark_outdated
from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def logged_in(client, alice):
    client.force_login(alice.account)
    return client


@pytest.fixture
def fact(alice, space):
    return builders.knowledge(alice, text="Alice drinks coffee.")


@pytest.fixture
def turn_page(space):
    return builders.page(space, user_message="I live in Leeds.", assistant_reply="Nice!")


def test_a_fact_marked_no_longer_true_is_kept_with_what_is_true_now(logged_in, alice, fact):
    response = logged_in.post(f"/chat/ava/memory/facts/{fact.pk}/outdated/", {"replacement": "tea"})

    assert response.status_code == 302 and response["Location"].startswith("/chat/ava/memory/")
    stored = KnowledgeEntry.objects.get(pk=fact.pk)
    assert stored.valid_to and stored.outdated_note == "tea"
    entry = AuditEntry.objects.get(action="knowledge.outdated")
    assert (entry.actor_kind, entry.actor_id) == ("end_user", str(alice.pk))


def test_the_page_shows_it_as_used_to_until_its_date_with_htmx_and_without(logged_in, alice, fact):
    htmx = logged_in.post(f"/chat/ava/memory/facts/{fact.pk}/outdated/", {"replacement": "tea"}, **HTMX)
    page = logged_in.get("/chat/ava/memory/").content.decode()

    body = htmx.content.decode()
    assert "<html" not in body and "Used to: Alice drinks coffee., until" in body and "Now: <span" in body
    assert "Used to: Alice drinks coffee." in page and f"/chat/ava/memory/facts/{fact.pk}/current/" in page


def test_a_fact_made_true_again_is_current_and_audited(logged_in, fact):
    knowledge_mark_outdated(entry=fact, actor=Actor.system("t"), reason="r", replacement="tea")

    response = logged_in.post(f"/chat/ava/memory/facts/{fact.pk}/current/", **HTMX)

    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert KnowledgeEntry.objects.get(pk=fact.pk).valid_to is None
    assert AuditEntry.objects.filter(action="knowledge.current").exists()


def test_a_turn_is_marked_no_longer_true_and_back(logged_in, turn_page):
    logged_in.post(f"/chat/ava/memory/turns/{turn_page.pk}/outdated/", {"replacement": "York"})
    assert Page.objects.get(pk=turn_page.pk).outdated_note == "York"
    assert "Used to be true, until" in logged_in.get("/chat/ava/memory/").content.decode()

    logged_in.post(f"/chat/ava/memory/turns/{turn_page.pk}/current/")

    assert Page.objects.get(pk=turn_page.pk).valid_to is None
    actions = AuditEntry.objects.filter(target_type="page").order_by("id").values_list("action", flat=True)
    assert list(actions) == ["page.outdated", "page.current"]


def test_what_is_true_now_is_escaped(logged_in, fact):
    logged_in.post(f"/chat/ava/memory/facts/{fact.pk}/outdated/", {"replacement": HOSTILE})

    body = logged_in.get("/chat/ava/memory/").content.decode()

    assert HOSTILE not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_someone_elses_fact_is_not_found_and_unchanged(client, bob, fact):
    client.force_login(bob.account)

    assert client.post(f"/chat/ava/memory/facts/{fact.pk}/outdated/").status_code == 404
    assert client.post(f"/chat/ava/memory/profile/{fact.pk}/outdated/").status_code == 404
    assert KnowledgeEntry.objects.get(pk=fact.pk).valid_to is None
