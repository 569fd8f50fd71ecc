"""When a reply cannot be made: the user's message is kept, no half turn is stored, and the reason is clear."""

from __future__ import annotations

import pytest

from chat.services import InvalidMessage, reply_generate
from memory.llm import LLMError
from memory.models import AuditEntry, ChatReply, Page, ReplyStatus
from memory.services.turns import InvalidTurn


def send(end_user, assistant, message: str, key: str = "key-1"):
    return reply_generate(end_user=end_user, assistant=assistant, message=message, idempotency_key=key)


def test_an_llm_timeout_fails_the_reply_keeps_the_message_and_stores_no_page(llm, alice, assistant):
    llm(LLMError("the LLM timed out: Request timed out.", retryable=True))

    result = send(alice, assistant, "Plan my week, please.")

    assert result.failed and result.text == ""
    reply = ChatReply.objects.get(pk=result.reply.pk)
    assert reply.status == ReplyStatus.FAILED
    assert reply.error == "the LLM timed out: Request timed out."
    assert reply.user_message == "Plan my week, please."
    assert reply.page is None and reply.llm_calls == 1
    assert not Page.objects.exists()
    assert not AuditEntry.objects.filter(action="reply.memory_injected").exists()


def test_the_error_text_of_the_llm_is_never_stored_as_memory(llm, alice, assistant):
    llm(LLMError("the LLM answered HTTP 500: upstream exploded", retryable=True))

    send(alice, assistant, "Hello")

    assert not Page.objects.filter(assistant_reply__contains="exploded").exists()


def test_a_failed_reply_is_generated_again_when_the_same_key_is_sent_again(llm, alice, assistant):
    fake = llm(LLMError("the LLM could not be reached: Connection error.", retryable=True), "Here is your plan.")
    failed = send(alice, assistant, "Plan my week, please.")

    retried = send(alice, assistant, "Plan my week, please.")

    assert retried.done and retried.reply.pk == failed.reply.pk
    assert retried.text == "Here is your plan." and retried.reply.error == ""
    assert Page.objects.count() == 1 and len(fake.calls) == 2


def test_an_unexpected_error_fails_the_reply_so_it_can_be_retried_and_still_surfaces(llm, alice, assistant):
    llm(RuntimeError("a bug"))

    with pytest.raises(RuntimeError, match="a bug"):
        send(alice, assistant, "Hello")

    reply = ChatReply.objects.get()
    assert reply.status == ReplyStatus.FAILED and reply.error == "an unexpected error stopped the reply"
    assert not Page.objects.exists()


def test_a_reply_too_long_to_store_fails_with_a_clear_reason(llm, settings, alice, assistant):
    settings.MEMORY_MESSAGE_MAX_CHARS = 40
    llm("x" * 41)

    result = send(alice, assistant, "Write me an essay")

    assert result.failed
    assert result.reply.error == "the reply could not be stored: assistant_reply is longer than 40 characters"
    assert not Page.objects.exists()


@pytest.mark.parametrize("message", ["", "   \n\t "])
def test_an_empty_message_is_refused_before_anything_is_stored(offline, alice, assistant, message):
    with pytest.raises(InvalidMessage, match="Write a message first"):
        send(alice, assistant, message)

    assert not ChatReply.objects.exists()


def test_a_message_over_the_size_limit_is_refused_with_the_limit_in_the_error(offline, settings, alice, assistant):
    settings.MEMORY_MESSAGE_MAX_CHARS = 1000

    with pytest.raises(InvalidMessage, match=r"Your message is 1,001 characters long; the limit is 1,000\."):
        send(alice, assistant, "a" * 1001)

    assert not ChatReply.objects.exists()


def test_a_missing_idempotency_key_is_refused(offline, alice, assistant):
    with pytest.raises(InvalidMessage, match="reload the page"):
        send(alice, assistant, "Hello", key="")


def test_an_end_user_cannot_talk_to_another_tenants_assistant(offline, stranger, assistant):
    with pytest.raises(InvalidTurn, match="different tenants"):
        send(stranger, assistant, "Hello")

    assert not ChatReply.objects.exists()


def test_a_deactivated_assistant_answers_nothing_and_stores_nothing(offline, alice, assistant):
    type(assistant).objects.filter(pk=assistant.pk).update(is_active=False)
    assistant.refresh_from_db()
    with pytest.raises(InvalidMessage, match="deactivated"):
        reply_generate(end_user=alice, assistant=assistant, message="Hello", idempotency_key="k")
    assert not Page.objects.exists()
