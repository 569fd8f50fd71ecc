"""Each personal-data policy value in the chat: what is stored, and what the model is shown."""

from __future__ import annotations

import pytest

from chat.services import reply_generate
from memory.llm import LLMError
from memory.models import ChatReply, Page
from tests import builders

CARD = "4000 0566 5566 5556"
EMAIL = "ann.lee@example.co.uk"


def send(end_user, assistant, message: str, key: str = "key-1"):
    return reply_generate(end_user=end_user, assistant=assistant, message=message, idempotency_key=key)


def everything_the_model_saw(fake) -> str:
    return "\n".join(message["content"] for call in fake.calls for message in call)


@pytest.fixture
def remembered_card(space, alice):
    """A fact and an earlier turn that hold the card number and the email."""
    builders.knowledge(alice, text=f"The user's card is {CARD}.")
    builders.page(space, user_message=f"My email is {EMAIL}", assistant_reply="Noted.")


def test_keep_shows_the_model_the_values_and_stores_them(llm, tenant, alice, assistant, remembered_card):
    fake = llm("Your card is on file.")

    send(alice, assistant, f"Is {CARD} still my card? Mail {EMAIL}")

    assert CARD in everything_the_model_saw(fake) and EMAIL in everything_the_model_saw(fake)
    assert CARD in Page.objects.get(user_message__startswith="Is").user_message


def test_mask_in_console_still_shows_the_model_the_values(llm, tenant, alice, assistant, remembered_card):
    builders.personal_data_policy(tenant, card="mask_console", email="mask_console")
    fake = llm("Your card is on file.")

    send(alice, assistant, f"Is {CARD} still my card?")

    assert CARD in everything_the_model_saw(fake) and EMAIL in everything_the_model_saw(fake)


def test_mask_in_prompts_hides_the_values_from_the_model_but_stores_them(
    llm, tenant, alice, assistant, remembered_card
):
    builders.personal_data_policy(tenant, card="mask_prompts", email="mask_prompts")
    fake = llm("Yes, your card ending 5556 is on file.")

    result = send(alice, assistant, f"Is {CARD} still my card? Mail {EMAIL}")

    seen = everything_the_model_saw(fake)
    assert CARD not in seen and EMAIL not in seen
    assert fake.calls[0][-1]["content"] == "Is [card ending 5556] still my card? Mail [email]"
    assert '"The user\'s card is [card ending 5556]."' in fake.calls[0][0]["content"]  # the fact, masked
    assert result.text == "Yes, your card ending 5556 is on file."
    assert CARD in Page.objects.get(pk=result.reply.page_id).user_message  # stored as said


def test_do_not_store_redacts_the_message_and_the_reply_before_they_are_stored(llm, tenant, alice, assistant):
    builders.personal_data_policy(tenant, card="do_not_store", secret="do_not_store")
    fake = llm("Saved your card 4000056655665556. Your password is hunter2, right?")

    result = send(alice, assistant, f"My card is {CARD} and my password is hunter2")

    assert "hunter2" not in everything_the_model_saw(fake) and CARD not in everything_the_model_saw(fake)
    page = Page.objects.get(pk=result.reply.page_id)
    assert page.user_message == "My card is [card ending 5556] and my password is [secret]"
    assert page.assistant_reply == "Saved your card [card ending 5556]. Your password is [secret], right?"
    assert result.text == page.assistant_reply
    assert ChatReply.objects.get().user_message == page.user_message


def test_a_failed_reply_keeps_the_message_only_as_redacted(llm, tenant, alice, assistant):
    builders.personal_data_policy(tenant, email="do_not_store")
    llm(LLMError("the model is down", retryable=False))

    result = send(alice, assistant, f"Write to {EMAIL}")

    assert result.failed and ChatReply.objects.get().user_message == "Write to [email]"
