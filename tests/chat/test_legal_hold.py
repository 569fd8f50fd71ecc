"""Self-service forgetting in the chat, for an end user under legal hold: refused with a plain message, nothing
deleted, as plain HTML and with HTMX."""

from __future__ import annotations

import pytest

from memory.models import KnowledgeEntry, Page
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def held(space, alice, client):
    client.force_login(alice.account)
    fact = builders.knowledge(alice, text="Alice is vegetarian.")
    page = builders.page(space, user_message="I bake bread.")
    legal_hold_place(end_user=alice, actor=Actor("operator", "9", "dana"), reason="litigation")
    return {"fact": fact, "page": page}


def test_forgetting_a_fact_is_refused_with_a_message_on_the_page(client, held):
    response = client.post(f"/chat/ava/memory/facts/{held['fact'].pk}/forget/", follow=True)
    assert "your data is under a legal hold" in response.content.decode()
    assert KnowledgeEntry.objects.filter(pk=held["fact"].pk).exists()


def test_forgetting_a_turn_with_htmx_shows_the_note_in_the_body(client, held):
    response = client.post(f"/chat/ava/memory/turns/{held['page'].pk}/forget/", **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "legal hold" in body and "<html" not in body
    assert Page.objects.filter(pk=held["page"].pk).exists()


def test_the_confirmation_already_says_the_data_is_on_hold(client, held):
    response = client.get(f"/chat/ava/memory/facts/{held['fact'].pk}/forget/confirm/")
    assert "Under legal hold since" in response.content.decode()
