"""Where the tenant's policy masked the end user's own text, their page says so once, naming the kinds hidden:
"Some details are hidden: your organisation's policy masks card numbers"."""

from __future__ import annotations

import pytest

from chat.hidden_details import hidden_details_note
from chat.services import reply_generate
from memory.personal_data import CARD, EMAIL, masked_categories
from tests import builders

NOTE = "Some details are hidden: your organisation&#x27;s policy masks card numbers."


@pytest.fixture
def masked_turn(offline, tenant, space, alice, assistant, client):
    """Alice said her card number under a policy that does not store cards: the turn holds its mask."""
    client.force_login(alice.account)
    builders.personal_data_policy(tenant, card="do_not_store")
    reply_generate(end_user=alice, assistant=assistant, message="My card is 4000 0566 5566 5556", idempotency_key="k")


def test_the_conversation_says_once_why_a_detail_is_hidden(client, masked_turn):
    body = client.get("/chat/ava/").content.decode()

    assert "[card ending 5556]" in body
    assert body.count(NOTE) == 1


def test_the_memory_page_says_once_why_a_detail_is_hidden(client, masked_turn):
    body = client.get("/chat/ava/memory/").content.decode()

    assert body.count(NOTE) == 1


def test_nothing_masked_means_no_note(client, space, alice):
    client.force_login(alice.account)
    builders.page(space, user_message="I bake bread.")

    assert "Some details are hidden" not in client.get("/chat/ava/memory/").content.decode()


def test_the_note_names_each_kind_found_in_order():
    texts = ["Write to [email]", "card [card ending 1234]", "again [email]"]

    assert masked_categories(texts) == [EMAIL, CARD]


def test_the_note_lists_several_kinds_in_words():
    note = hidden_details_note(["[email] and [card ending 1234] and [phone]"])

    assert note == (
        "Some details are hidden: your organisation's policy masks email addresses, phone numbers and card numbers."
    )
