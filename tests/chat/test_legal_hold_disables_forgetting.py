"""Under a legal hold the end user's Delete buttons are disabled with the reason beside them, and no dialog says
"Nothing was deleted" before anything was tried."""

from __future__ import annotations

import re

import pytest

from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from tests import builders

REASON = re.compile(r"Under legal hold since \d+ \w+ \d{4}, placed by dana: nothing can be deleted\.")


@pytest.fixture
def held(space, alice, client):
    client.force_login(alice.account)
    fact = builders.knowledge(alice, text="Alice is vegetarian.")
    legal_hold_place(end_user=alice, actor=Actor("operator", "9", "dana"), reason="litigation")
    return fact


def test_the_forget_dialog_disables_delete_and_says_why(client, held):
    body = client.get(f"/chat/ava/memory/facts/{held.pk}/forget/confirm/").content.decode()

    assert re.search(r"<button[^>]*disabled[^>]*>Delete for good</button>", body)
    assert REASON.search(body)


def test_the_forget_dialog_does_not_say_nothing_was_deleted_before_any_click(client, held):
    body = client.get(f"/chat/ava/memory/facts/{held.pk}/forget/confirm/").content.decode()

    assert "Nothing was deleted" not in body


def test_the_memory_page_disables_every_delete_button_and_says_why_once(client, held):
    body = client.get("/chat/ava/memory/").content.decode()

    assert 'data-forget="facts"' not in body
    assert re.search(r"<button[^>]*disabled[^>]*>Delete</button>", body)
    assert len(REASON.findall(body)) == 1


def test_without_a_hold_the_dialog_offers_delete(client, space, alice):
    client.force_login(alice.account)
    fact = builders.knowledge(alice, text="Alice is vegetarian.")

    body = client.get(f"/chat/ava/memory/facts/{fact.pk}/forget/confirm/").content.decode()

    assert "disabled" not in body and "legal hold" not in body
