"""Facts and profile versions awaiting review, or rejected, never reach a prompt; approved ones do."""

from __future__ import annotations

from datetime import timedelta

from chat.prompt import prompt_build, quoted
from memory.models import KnowledgeEntry, ProfileVersion, ReviewState
from memory.retrieval.search import retrieve
from memory.services.audit import Actor
from memory.services.forgetting import profile_rederive
from memory.services.review import knowledge_review, profile_version_review
from tests import builders
from tests.builders import T0

REVIEWER = Actor.system("test-reviewer")
QUESTION = "Does Alice see a therapist about her anxiety?"


def system_prompt(space) -> str:
    retrieval = retrieve(space=space, query=QUESTION, record_visits=False, now=T0 + timedelta(days=1))
    prompt = prompt_build(assistant=space.assistant, retrieval=retrieval, message=QUESTION, now=T0, budget=100_000)
    return prompt.system


def held(item, state=ReviewState.PENDING):
    type(item).objects.filter(pk=item.pk).update(review_state=state)
    item.refresh_from_db()
    return item


def test_a_pending_fact_is_absent_from_the_prompt_until_approved(space, alice):
    fact = held(builders.knowledge(alice, text="Alice sees a therapist about her anxiety."))
    assert quoted(fact.text) not in system_prompt(space)

    knowledge_review(entry=fact, decision="approve", actor=REVIEWER)

    assert quoted(fact.text) in system_prompt(space)


def test_a_pinned_pending_fact_stays_out_too(space, alice):
    fact = held(builders.knowledge(alice, text="Alice sees a therapist about her anxiety.", pinned=True))

    assert quoted(fact.text) not in system_prompt(space)


def test_a_rejected_fact_never_reaches_the_prompt(space, alice):
    fact = held(builders.knowledge(alice, text="Alice sees a therapist about her anxiety."))

    knowledge_review(entry=fact, decision="reject", actor=REVIEWER, reason="health data")

    assert quoted(fact.text) not in system_prompt(space)
    assert KnowledgeEntry.objects.get(pk=fact.pk).review_state == ReviewState.REJECTED


def test_an_edited_and_approved_fact_reaches_the_prompt_as_edited(space, alice):
    fact = held(builders.knowledge(alice, text="Alice sees a therapist about her anxiety."))

    knowledge_review(entry=fact, decision="approve", text="Alice looks after her wellbeing.", actor=REVIEWER,
                     reason="less detail")  # fmt: skip

    system = system_prompt(space)
    assert quoted("Alice looks after her wellbeing.") in system and "therapist" not in system


def test_while_a_profile_version_is_pending_the_last_approved_one_is_used(space, alice):
    builders.profile(alice, text="Alice bakes sourdough.")
    newer = held(builders.profile(alice, text="Alice bakes sourdough and sees a therapist."))
    assert quoted("Alice bakes sourdough.") in system_prompt(space) and "therapist" not in system_prompt(space)

    profile_version_review(version=newer, decision="approve", actor=REVIEWER)

    assert quoted(newer.text) in system_prompt(space)


def test_a_rejected_profile_version_never_reaches_the_prompt(space, alice):
    only = held(builders.profile(alice, text="Alice sees a therapist."))

    profile_version_review(version=only, decision="reject", actor=REVIEWER, reason="health")

    assert "therapist" not in system_prompt(space)
    assert ProfileVersion.objects.get(pk=only.pk).review_state == ReviewState.REJECTED


def test_a_re_derived_profile_learns_only_from_approved_facts(space, alice, llm):
    fake = llm('{"profile": "The user bakes sourdough."}')
    builders.knowledge(alice, text="The user bakes sourdough.")
    held(builders.knowledge(alice, text="The user sees a therapist."))
    version = builders.profile(alice, text="The user bakes sourdough. The user sees a therapist.")
    ProfileVersion.objects.filter(pk=version.pk).update(stale=True)

    rederived = profile_rederive(end_user_id=alice.pk)

    asked = fake.calls[0][-1]["content"]
    assert "bakes sourdough" in asked and "therapist" not in asked
    assert rederived.text == "The user bakes sourdough." and rederived.review_state == ReviewState.APPROVED
