"""What is true now answers first: a later statement of the same thing marks the earlier one as earlier, in the offline
reply and in the prompt built for a model; a question about the past still finds the earlier value."""

from __future__ import annotations

from datetime import timedelta

from chat.offline_reply import offline_reply
from chat.prompt import prompt_build
from chat.services import reply_generate
from memory.models import Page
from memory.retrieval.search import retrieve
from memory.services.turns import turn_record
from tests import builders
from tests.builders import T0

COFFEE = "I drink a flat white every morning."
TEA = "Actually I've given up coffee, I now drink green tea."
QUESTION = "What do I drink in the morning?"


def _said(space, *messages, start=T0):
    for day, message in enumerate(messages):
        turn_record(
            end_user=space.end_user, assistant=space.assistant, user_message=message, assistant_reply="Noted.",
            at=start + timedelta(days=day),
        )  # fmt: skip


def _chat(space, message: str, key: str):
    return reply_generate(end_user=space.end_user, assistant=space.assistant, message=message, idempotency_key=key)


def test_offline_the_reply_answers_with_the_current_value_and_names_the_earlier_one(space):
    _said(space, COFFEE, "The weather is lovely today.", TEA)
    reply = _chat(space, QUESTION, "q1").reply.page.assistant_reply
    answer, *rest = reply.splitlines()
    assert "green tea" in answer and "flat white" not in answer
    assert any("Earlier (no longer current)" in line and "flat white" in line for line in rest)


def test_the_prompt_for_a_model_marks_the_earlier_turn_and_quotes_the_current_one_first(space):
    _said(space, COFFEE, TEA)
    retrieval = retrieve(space=space, query=QUESTION, record_visits=False, now=T0 + timedelta(days=3))
    coffee = Page.objects.get(user_message=COFFEE)
    assert retrieval.earlier[coffee.id].value == "green tea"
    system = prompt_build(
        assistant=space.assistant, retrieval=retrieval, message=QUESTION, now=T0 + timedelta(days=3), budget=100_000
    ).system
    coffee_at = system.index("flat white every morning")
    changed = f"{T0 + timedelta(days=1):%d %b %Y}"
    assert f'EARLIER, no longer current: on {changed} "drink" became "green tea"' in system[:coffee_at]
    assert "A memory marked EARLIER is no longer true" in system


def test_in_mid_term_memory_the_newer_turn_ranks_ahead_of_the_one_it_replaced(
    space, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        _said(space, COFFEE, *[f"Small talk number {i} about the garden." for i in range(3)], TEA)
    builders.stm_push_out(space, django_capture_on_commit_callbacks)
    retrieval = retrieve(space=space, query=QUESTION, record_visits=False, now=T0 + timedelta(days=30))
    ids = [scored.page.user_message for scored in retrieval.ranked]
    assert ids.index(TEA) < ids.index(COFFEE)
    assert {p.page.tier for p in retrieval.ranked if p.page.user_message in (COFFEE, TEA)} == {"mtm"}


def test_a_question_about_the_past_is_answered_with_the_earlier_value(space):
    _said(space, COFFEE, TEA)
    retrieval = retrieve(space=space, query="What did I drink before?", record_visits=False, now=T0 + timedelta(3))
    answer = offline_reply(retrieval=retrieval).text.splitlines()[0]
    assert "flat white" in answer and "that changed later" in answer


def test_a_turn_that_says_the_same_value_again_is_not_earlier(space):
    _said(space, COFFEE, "Yes, I drink a flat white every morning, always have.")
    retrieval = retrieve(space=space, query=QUESTION, record_visits=False, now=T0 + timedelta(days=3))
    assert retrieval.earlier == {}
