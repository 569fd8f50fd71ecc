"""An outdated fact or turn shows on its row as history: since when, what replaced it, and the action to undo it;
agents see a flag for a supervisor instead of the actions."""

from __future__ import annotations

import pytest

from memory.models import KnowledgeEntry, Page
from memory.services.audit import Actor
from memory.services.validity import knowledge_mark_outdated, page_mark_outdated
from tests import builders
from tests.builders import T0
from tests.dashboard.conftest import HX

HOSTILE = '<script>alert("x")</script>'
SUPERVISOR = Actor("operator", "1", "sam")


@pytest.fixture
def fact(alice, alice_space):
    return KnowledgeEntry.objects.filter(end_user=alice).order_by("id").first()


def long_term(client, end_user, **headers) -> str:
    return client.get(f"/console/acme/users/{end_user.pk}/", {"tab": "long-term"}, **headers).content.decode()


def test_an_outdated_fact_shows_since_when_its_replacing_value_and_mark_current(client, supervisor_user, alice, fact):
    knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="r", replacement="tea", now=T0)
    client.force_login(supervisor_user)

    body = long_term(client, alice)

    assert "Outdated since 5 Jan 2026" in body and "now: tea" in body
    assert f"/act/knowledge/{fact.pk}/current/" in body and f"/act/knowledge/{fact.pk}/outdated/" not in body
    assert fact.text in body  # the history stays readable


def test_a_current_fact_offers_mark_outdated_beside_forget(client, supervisor_user, alice, fact):
    client.force_login(supervisor_user)

    body = long_term(client, alice)

    assert f"/act/knowledge/{fact.pk}/outdated/" in body and "Mark outdated" in body


def test_a_fact_replaced_by_another_names_it(client, supervisor_user, alice, fact):
    newer = builders.knowledge(alice, text="The user drinks tea now")
    KnowledgeEntry.objects.filter(pk=fact.pk).update(valid_to=T0, superseded_by=newer)
    client.force_login(supervisor_user)

    assert f"replaced by #{newer.pk}" in long_term(client, alice, **HX)


def test_an_outdated_turn_shows_on_the_short_term_tab(client, supervisor_user, alice, alice_space):
    turn = Page.objects.filter(space=alice_space, segment__isnull=True).order_by("seq").first()
    page_mark_outdated(page=turn, actor=SUPERVISOR, reason="r", replacement="York", now=T0)
    client.force_login(supervisor_user)

    body = client.get(f"/console/acme/users/{alice.pk}/", {"tab": "short-term"}).content.decode()

    assert "Outdated since 5 Jan 2026" in body and "now: York" in body and f"/act/page/{turn.pk}/current/" in body


def test_a_hostile_replacing_value_is_escaped(client, supervisor_user, alice, fact):
    knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="r", replacement=HOSTILE)
    client.force_login(supervisor_user)

    body = long_term(client, alice)

    assert HOSTILE not in body and "&lt;script&gt;" in body


def test_an_agent_sees_a_flag_for_a_supervisor_and_no_outdated_action(client, agent_user, alice, fact):
    client.force_login(agent_user)

    body = long_term(client, alice)

    assert f"/console/acme/flag/knowledge/{fact.pk}/" in body and "Flag for a supervisor" in body
    assert "/outdated/" not in body


def test_marking_outdated_through_the_console_stores_the_replacing_value(client, supervisor_user, fact):
    client.force_login(supervisor_user)

    response = client.post(f"/console/acme/act/knowledge/{fact.pk}/outdated/", {"reason": "r", "replacement": "tea"})

    assert response.status_code == 302
    assert KnowledgeEntry.objects.get(pk=fact.pk).outdated_note == "tea"


def test_the_outdated_form_asks_for_a_replacing_value_as_a_modal_and_as_a_page(client, supervisor_user, fact):
    client.force_login(supervisor_user)
    url = f"/console/acme/act/knowledge/{fact.pk}/outdated/"

    modal, page = client.get(url, **HX).content.decode(), client.get(url).content.decode()

    assert modal.lstrip().startswith('<div class="modal-backdrop">') and 'name="replacement"' in modal
    assert "<html" in page and 'name="replacement"' in page and "Mark outdated" in page
