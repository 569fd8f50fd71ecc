"""reply_generate: retrieve, prompt, generate (LLM or offline), record the turn, and keep the record of the reply."""

from __future__ import annotations

import pytest
from django.utils import timezone

from chat.offline_reply import OFFLINE_LABEL
from chat.prompt import quoted
from chat.services import reply_generate
from memory.models import AuditEntry, ChatReply, Page, Segment
from memory.models.tiers import PageSource, ReplySource, Tier
from memory.services.visits import segment_visits_apply
from tests import builders


def send(end_user, assistant, message: str, key: str = "key-1"):
    return reply_generate(end_user=end_user, assistant=assistant, message=message, idempotency_key=key)


@pytest.fixture
def lisbon(space, alice):
    builders.knowledge(alice, text="Alice is vegetarian.")
    return builders.segment_with_pages(
        space,
        summary="Lisbon holiday vegetarian food",
        messages=["I am going to Lisbon in May", "Vegetarian food in Lisbon?"],
    )


def test_a_reply_is_generated_by_the_llm_and_the_turn_is_stored(llm, alice, assistant, lisbon):
    fake = llm("Try the Time Out Market: lots of vegetarian choice.")

    result = send(alice, assistant, "Where should I eat in Lisbon?")

    assert result.done and not result.replayed
    assert result.text == "Try the Time Out Market: lots of vegetarian choice."
    page = Page.objects.get(space__end_user=alice, tier=Tier.SHORT_TERM)
    assert (page.user_message, page.assistant_reply) == ("Where should I eat in Lisbon?", result.text)
    assert page.source == PageSource.CHAT
    assert result.reply.page == page and result.reply.mode == "llm"
    assert len(fake.calls) == 1 and fake.calls[0][-1] == {"role": "user", "content": "Where should I eat in Lisbon?"}
    assert fake.requests[0]["max_tokens"] == 1000


def test_the_llm_sees_the_retrieved_memory_and_the_reply_returns_the_retrieval(llm, alice, assistant, lisbon):
    fake = llm("Noted.")

    result = send(alice, assistant, "Vegetarian food in Lisbon")

    system = fake.calls[0][0]["content"]
    assert quoted("Alice is vegetarian.") in system and quoted("Vegetarian food in Lisbon?") in system
    assert result.retrieval is not None
    assert [s.segment.id for s in result.retrieval.segments] == [lisbon.id]


def test_llm_calls_and_tokens_are_kept_with_the_reply(llm, alice, assistant):
    llm("Hello Alice!")

    reply = send(alice, assistant, "Hello!").reply

    reply.refresh_from_db()
    assert reply.llm_calls == 1
    assert reply.prompt_tokens > 0 and reply.completion_tokens == len("Hello Alice!") // 4
    assert reply.completed_at is not None


def test_memory_used_names_the_pages_segments_and_knowledge_that_went_into_the_reply(llm, alice, assistant, lisbon):
    llm("Noted.")

    reply = send(alice, assistant, "Vegetarian food in Lisbon").reply

    used = ChatReply.objects.get(pk=reply.pk).memory_used
    assert [s["id"] for s in used["segments"]] == [lisbon.id]
    assert {p["id"] for p in used["pages"]} == set(lisbon.pages.values_list("id", flat=True))
    assert [k["id"] for k in used["user_knowledge"]] == [alice.knowledge.get().id]
    assert reply.dropped == []


def test_the_memory_a_reply_used_is_audited_as_the_end_users_request(llm, alice, assistant, lisbon):
    llm("Noted.")

    reply = send(alice, assistant, "Vegetarian food in Lisbon").reply

    entry = AuditEntry.objects.get(action="reply.memory_injected")
    assert (entry.actor_kind, entry.actor_id, entry.end_user) == ("end_user", str(alice.pk), alice)
    assert entry.detail["segments"] == reply.memory_used["segments"]
    assert entry.detail["dropped"] == []


def test_a_segment_that_supplied_a_page_is_visited(llm, alice, assistant, lisbon):
    llm("Noted.")

    send(alice, assistant, "Vegetarian food in Lisbon")
    segment_visits_apply()  # the worker, woken once the reply commits

    lisbon.refresh_from_db()
    assert lisbon.n_visit == 1


def test_while_memory_is_paused_retrieval_records_no_visits(llm, alice, assistant, space, lisbon):
    llm("Noted.")
    builders.pause(space)

    assert send(alice, assistant, "Vegetarian food in Lisbon").done
    segment_visits_apply()

    lisbon.refresh_from_db()
    assert lisbon.n_visit == 0


def test_a_budget_drop_is_recorded_on_the_reply_and_in_the_audit(llm, settings, alice, assistant, lisbon):
    settings.CHAT_PROMPT_TOKEN_BUDGET = 1
    llm("Noted.")

    reply = send(alice, assistant, "Vegetarian food in Lisbon").reply

    assert {d["kind"] for d in reply.dropped} == {"knowledge", "page"}
    assert all({"id", "score", "tokens"} <= d.keys() for d in reply.dropped)
    assert reply.memory_used["pages"] == [] and reply.memory_used["user_knowledge"] == []
    assert AuditEntry.objects.get(action="reply.memory_injected").detail["dropped"] == reply.dropped


def test_offline_the_reply_is_labelled_and_says_what_is_remembered_that_is_relevant(offline, alice, assistant, lisbon):
    result = send(alice, assistant, "Vegetarian food in Lisbon")

    assert result.done and result.reply.mode == "offline"
    first, *supporting = result.text.splitlines()
    assert first.startswith(f"{OFFLINE_LABEL} Alice is vegetarian — I noted it on ")
    assert supporting[0] == "Also relevant:" and len(supporting) == 2
    assert supporting[1].startswith("- On 5 Jan") and supporting[1].endswith("you said: “I am going to Lisbon in May”")
    assert result.reply.llm_calls == 0 and result.reply.prompt_tokens == 0
    assert Page.objects.filter(space__end_user=alice, assistant_reply=result.text).exists()


def test_offline_with_nothing_relevant_the_reply_says_so_plainly(offline, alice, assistant):
    result = send(alice, assistant, "Hello there")

    assert result.text.startswith(OFFLINE_LABEL)
    assert "I don't remember anything relevant to this yet" in result.text


def test_a_reply_never_uses_another_users_memory(llm, alice, bob, assistant, space):
    builders.knowledge(bob, text="Bob's dog Biscuit digs up the garden.")
    builders.segment_with_pages(
        builders.space_of(bob, assistant), summary="Biscuit garden", messages=["Biscuit digs up the garden"]
    )
    fake = llm("Noted.")

    send(alice, assistant, "Tell me about Biscuit the dog digging the garden")

    assert "Biscuit" not in fake.calls[0][0]["content"]


def test_turns_past_short_term_capacity_move_on_to_mid_term_memory(
    offline, settings, alice, assistant, space, django_capture_on_commit_callbacks
):
    settings.MEMORY_STM_CAPACITY = 2
    with django_capture_on_commit_callbacks(execute=True):
        for number in range(3):
            send(alice, assistant, f"Message number {number} about gardening", key=f"key-{number}")

    assert Page.objects.filter(space=space, tier=Tier.SHORT_TERM).count() == 2
    assert Segment.objects.filter(space=space).count() == 1
    assert ChatReply.objects.filter(space=space, status="done").count() == 3


def test_a_message_is_stored_as_sent_with_its_reply_in_one_page(llm, alice, assistant, space):
    builders.page(space, user_message="Earlier turn.", assistant_reply="Earlier reply.")
    llm("  Padded reply.  \n")

    result = send(alice, assistant, "Line one\nline two <b>bold</b>")

    page = result.reply.page
    assert page.user_message == "Line one\nline two <b>bold</b>"
    assert page.assistant_reply == "Padded reply."
    assert page.seq == 2


def test_offline_the_reply_mentions_turns_of_this_conversation_on_the_same_subject(offline, alice, assistant, space):
    builders.page(space, user_message="My left knee aches after long runs.")
    builders.page(space, user_message="I bake bread on Sundays.")

    result = send(alice, assistant, "What should I do about my knee?")

    assert result.text.startswith(f"{OFFLINE_LABEL} Your left knee aches after long runs — you told me on ")
    assert "bread" not in result.text


def test_offline_the_reply_is_kept_as_system_text_and_an_llm_reply_as_the_assistants(llm, settings, alice, assistant):
    llm("Hello Alice!")
    assert send(alice, assistant, "Hello!", key="llm").reply.page.reply_source == ReplySource.ASSISTANT

    settings.LLM_BASE_URL = ""
    assert send(alice, assistant, "Hello again!", key="offline").reply.page.reply_source == ReplySource.SYSTEM


def test_offline_memory_used_names_only_what_the_reply_used_best_first(offline, alice, assistant, space):
    bread = builders.page(space, user_message="I bake bread on Sundays.")
    aches = builders.page(space, user_message="My left knee aches after long runs.")
    stairs = builders.page(space, user_message="Climbing stairs hurts my knee since I fell on the knee.")

    reply = send(alice, assistant, "Why does my knee ache?").reply

    assert [p["id"] for p in reply.memory_used["pages"]] == [aches.id, stairs.id]
    assert bread.id not in reply.memory_used["short_term_page_ids"] + [p["id"] for p in reply.memory_used["pages"]]
    assert reply.page.assistant_reply.splitlines()[0].endswith(
        "Your left knee aches after long runs — you told me on " + _today()
    )


def test_offline_a_greeting_answers_from_no_memory(offline, alice, assistant, space):
    builders.page(space, user_message="Hi!")
    builders.page(space, user_message="I like kiwis.")

    result = send(alice, assistant, "Hi!")

    assert "I don't remember anything relevant to this yet" in result.text
    assert result.reply.memory_used["pages"] == [] and result.reply.memory_used["short_term_page_ids"] == []


def _today() -> str:
    return f"{timezone.now():%d %b}.".lstrip("0")
