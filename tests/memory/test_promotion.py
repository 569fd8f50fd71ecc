"""MTM → LPM promotion: every hot segment with new pages is promoted; FIFO knowledge keeps pinned and locked."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory.llm import use_llm
from memory.models import KnowledgeEntry, MemoryEvent, ProfileVersion, Segment
from memory.models.events import EventKind, EventStatus
from memory.models.tiers import HeatEvent, KnowledgeKind
from memory.services.promotion import knowledge_enforce_capacity, segment_promote
from memory.steps.types import StepFailed
from tests import builders
from tests.builders import T0
from tests.fakes import ScriptedLLM

NOW = T0 + timedelta(days=1)


def test_a_hot_segment_updates_the_profile_and_stores_facts_with_their_pages(space):
    segment = builders.segment_with_pages(
        space,
        summary="hiking",
        messages=[("I love hiking in the Alps with my dog Rex.", "I will send you a list of dog-friendly trails.")],
        l_interaction=5,
    )
    report = segment_promote(segment_id=segment.id, now=NOW)
    assert report.promoted
    profile = ProfileVersion.objects.get(end_user=space.end_user)
    assert profile.number == 1 and "hiking in the Alps" in profile.text
    assert list(profile.source_pages.all()) == list(segment.pages.all())
    user_fact = KnowledgeEntry.objects.get(kind=KnowledgeKind.USER)
    # a statement about the user; its date is the entry's, shown beside it, not part of the text
    assert user_fact.text == "The user loves hiking in the Alps with their dog Rex."
    assistant_fact = KnowledgeEntry.objects.get(kind=KnowledgeKind.ASSISTANT)
    assert assistant_fact.assistant_id == space.assistant_id and "trails" in assistant_fact.text
    assert user_fact.embedding is not None
    assert set(user_fact.source_pages.all()) == set(segment.pages.all())


def test_promotion_marks_pages_analysed_resets_interaction_and_records_itself(space):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "Sounds great.")], l_interaction=5
    )
    segment_promote(segment_id=segment.id, now=NOW)
    segment.refresh_from_db()
    assert segment.l_interaction == 0
    assert not segment.pages.filter(analysed=False).exists()
    assert segment.heat_samples.filter(event=HeatEvent.PROMOTED).count() == 1
    event = MemoryEvent.objects.get(kind=EventKind.PROMOTION)
    assert event.status == EventStatus.OK and event.target_id == segment.id and event.mode == "offline"


def test_promoting_twice_has_one_effect(space):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "Sounds great.")], l_interaction=9
    )
    segment_promote(segment_id=segment.id, now=NOW)
    builders.heat_set(segment, l_interaction=9)  # still hot, but nothing new to analyse
    second = segment_promote(segment_id=segment.id, now=NOW)
    assert not second.promoted and second.reason == "nothing unanalysed"
    assert ProfileVersion.objects.count() == 1
    assert KnowledgeEntry.objects.count() == 1


def test_a_segment_below_tau_or_deleted_is_left_alone(space):
    cool = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=3
    )
    assert segment_promote(segment_id=cool.id, now=NOW).reason == "not hot"
    assert segment_promote(segment_id=987654, now=NOW).reason == "segment gone"
    assert not ProfileVersion.objects.exists()


def test_every_hot_segment_with_new_pages_is_promoted_in_one_pass(space, django_capture_on_commit_callbacks):
    from memory.selectors.heat import hot_segment_ids

    first = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    second = builders.segment_with_pages(
        space, summary="baking", messages=[("I bake sourdough bread every Sunday.", "ok")], l_interaction=5
    )
    done = builders.segment_with_pages(space, summary="done", messages=[("I have two sisters.", "ok")], l_interaction=5)
    done.pages.update(analysed=True)
    assert hot_segment_ids(space_id=space.id, now=NOW) == sorted([first.id, second.id])


def test_exact_duplicate_facts_are_not_stored_twice(space):
    first = builders.segment_with_pages(
        space, summary="a", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    second = builders.segment_with_pages(
        space, summary="b", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    segment_promote(segment_id=first.id, now=NOW)
    segment_promote(segment_id=second.id, now=NOW)
    assert KnowledgeEntry.objects.filter(kind=KnowledgeKind.USER).count() == 1


def test_the_knowledge_store_drops_the_oldest_unpinned_unlocked_entries_past_capacity(space, settings):
    settings.MEMORY_KNOWLEDGE_CAPACITY = 3
    entries = []
    for i in range(5):
        entries.append(builders.knowledge(space.end_user, text=f"fact {i}", pinned=(i == 0), locked=(i == 1)))
    dropped = knowledge_enforce_capacity(space=space)
    assert dropped == [entries[2].id, entries[3].id]
    assert sorted(KnowledgeEntry.objects.values_list("text", flat=True)) == ["fact 0", "fact 1", "fact 4"]
    assert MemoryEvent.objects.get(kind=EventKind.KNOWLEDGE_DROPPED).detail["dropped_knowledge_ids"] == dropped


def test_a_locked_profile_is_never_overwritten_by_promotion(space):
    builders.profile(space.end_user, text="Set by an operator.", locked=True)
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    assert segment_promote(segment_id=segment.id, now=NOW).profile_version_id is None
    assert list(ProfileVersion.objects.values_list("text", flat=True)) == ["Set by an operator."]


@pytest.fixture
def llm_mode(settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"


def test_with_an_llm_promotion_costs_one_call_for_the_profile_and_the_knowledge(space, llm_mode):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "I'll find trails.")], l_interaction=5
    )
    answer = {
        "profile": "Loves hiking with Rex, a dog.",
        "user_facts": ["2026-01-05: loves hiking with Rex"],
        "assistant_facts": ["promised trails"],
    }
    llm = ScriptedLLM([json.dumps(answer)])
    with use_llm(llm):
        report = segment_promote(segment_id=segment.id, now=NOW)
    assert len(llm.calls) == 1
    assert ProfileVersion.objects.get().text == "Loves hiking with Rex, a dog."
    assert sorted(KnowledgeEntry.objects.filter(id__in=report.knowledge_ids).values_list("text", flat=True)) == [
        "2026-01-05: loves hiking with Rex",
        "promised trails",
    ]
    event = MemoryEvent.objects.get(kind=EventKind.PROMOTION)
    assert event.llm_calls == 1 and event.prompt_tokens > 0


def test_a_promotion_answer_without_the_facts_is_asked_for_again_and_then_stored_whole(space, llm_mode):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    whole = {"profile": "Loves hiking.", "user_facts": ["2026-01-05: loves hiking"], "assistant_facts": []}
    llm = ScriptedLLM([json.dumps({"profile": "Loves hiking."}), json.dumps(whole)])
    with use_llm(llm):
        segment_promote(segment_id=segment.id, now=NOW)
    assert len(llm.calls) == 2 and '"user_facts" must be a list of strings' in llm.calls[1][-1]["content"]
    assert ProfileVersion.objects.get().text == "Loves hiking."
    assert KnowledgeEntry.objects.get().text == "2026-01-05: loves hiking"


def test_a_locked_profile_makes_the_promotion_ask_only_for_the_facts(space, llm_mode):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    ProfileVersion.objects.create(end_user_id=space.end_user_id, number=1, text="Kept as written.", locked=True)
    llm = ScriptedLLM([json.dumps({"user_facts": ["2026-01-05: loves hiking"], "assistant_facts": []})])
    with use_llm(llm):
        segment_promote(segment_id=segment.id, now=NOW)
    assert len(llm.calls) == 1 and '"profile"' not in llm.calls[0][0]["content"]
    assert list(ProfileVersion.objects.values_list("text", flat=True)) == ["Kept as written."]
    assert KnowledgeEntry.objects.get().text == "2026-01-05: loves hiking"


def test_a_failing_llm_leaves_long_term_memory_unchanged_and_pages_unanalysed(space, llm_mode):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=5
    )
    llm = ScriptedLLM([json.dumps({"profile": "Loves hiking."}), "more garbage"])
    with use_llm(llm), pytest.raises(StepFailed):
        segment_promote(segment_id=segment.id, now=NOW)
    assert not ProfileVersion.objects.exists()
    assert not KnowledgeEntry.objects.exists()
    assert segment.pages.filter(analysed=False).count() == 1
    assert Segment.objects.get(pk=segment.pk).l_interaction == 5
    failed = MemoryEvent.objects.get(kind=EventKind.PROMOTION)
    assert failed.status == EventStatus.FAILED and failed.llm_calls == 2  # every call is counted, failed ones too
