"""A double submit answers once: the same idempotency key returns the first reply and records no second turn."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection

from chat.services import reply_generate
from memory.llm import LLMReply, use_llm
from memory.models import ChatReply, Page, ReplyStatus
from memory.services.replies import chat_reply_claim


def send(end_user, assistant, message: str, key: str = "key-1"):
    return reply_generate(end_user=end_user, assistant=assistant, message=message, idempotency_key=key)


def test_a_second_submit_with_the_same_key_returns_the_first_reply_and_stores_no_second_turn(llm, alice, assistant):
    fake = llm("Hello Alice!")  # a second LLM call would exhaust the script
    first = send(alice, assistant, "Hello!")

    second = send(alice, assistant, "Hello!")

    assert second.replayed and second.done
    assert second.reply.pk == first.reply.pk and second.text == "Hello Alice!"
    assert Page.objects.count() == 1 and len(fake.calls) == 1


def test_a_submit_while_the_first_is_still_being_answered_is_told_so(llm, alice, assistant, space):
    fake = llm()
    chat_reply_claim(space=space, idempotency_key="key-1", user_message="Hello!")

    result = send(alice, assistant, "Hello!")

    assert result.replayed and result.pending and result.text == ""
    assert fake.calls == [] and not Page.objects.exists()


def test_a_reply_left_pending_by_a_dead_process_can_be_retried_once_it_is_stale(llm, alice, assistant, space):
    llm("Hello again!")
    reply, _ = chat_reply_claim(space=space, idempotency_key="key-1", user_message="Hello!")
    ChatReply.objects.filter(pk=reply.pk).update(created_at=reply.created_at - timedelta(hours=1))

    result = send(alice, assistant, "Hello!")

    assert result.done and result.text == "Hello again!"
    assert Page.objects.count() == 1


def test_different_keys_are_different_turns(offline, alice, assistant):
    send(alice, assistant, "Hello!", key="key-1")
    send(alice, assistant, "Hello!", key="key-2")

    assert Page.objects.count() == 2 and ChatReply.objects.count() == 2


def test_keys_belong_to_one_memory_space(offline, alice, bob, assistant):
    send(alice, assistant, "Hello!", key="same")
    send(bob, assistant, "Hello!", key="same")

    assert Page.objects.count() == 2


class GatedLLM:
    """Answers only once the test opens the gate, so a second request can arrive while the first is pending."""

    def __init__(self) -> None:
        self.called = threading.Event()
        self.gate = threading.Event()
        self.calls = 0

    def complete(self, messages, **options) -> LLMReply:
        self.calls += 1
        self.called.set()
        assert self.gate.wait(10)
        return LLMReply(text="Only once.", prompt_tokens=10, completion_tokens=2)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_submits_with_one_key_make_one_turn(settings, alice, assistant):
    settings.LLM_BASE_URL = "http://llm.test/v1"
    gated = GatedLLM()
    results = {}

    def first() -> None:
        try:
            results["first"] = send(alice, assistant, "Hello!")
        finally:
            connection.close()

    with use_llm(gated):
        thread = threading.Thread(target=first)
        thread.start()
        assert gated.called.wait(10)
        results["second"] = send(alice, assistant, "Hello!")
        gated.gate.set()
        thread.join(10)

    assert results["second"].replayed and results["second"].pending
    assert results["first"].done and results["first"].text == "Only once."
    assert gated.calls == 1 and Page.objects.count() == 1
    assert ChatReply.objects.get().status == ReplyStatus.DONE
