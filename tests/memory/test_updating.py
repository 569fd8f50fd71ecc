"""STM → MTM updating: chains, segments by F, summaries that follow their pages, eviction, idempotency, failure."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory.llm import use_llm
from memory.models import HeatSample, MemoryEvent, Page, Segment
from memory.models.events import EventKind, EventStatus
from memory.models.tiers import HeatEvent, Tier
from memory.services.updating import pages_place, segments_evict_past_capacity
from memory.steps.types import StepFailed
from tests import builders
from tests.builders import T0
from tests.fakes import ScriptedLLM

HIKING = [
    "I went hiking in the mountains with my dog Rex, the mountain trail was steep.",
    "Rex loved the mountain trail, hiking with my dog is the best part of the week.",
    "Next weekend I plan more hiking on the mountain trail with Rex my dog.",
]
BAKING = [
    "I baked sourdough bread today, the sourdough starter finally worked in the oven.",
    "My sourdough bread came out of the oven with a great crust, baking is fun.",
]


def fill_stm(space, start=T0 - timedelta(days=1)):
    builders.turns(space, messages=[f"filler {i} about nothing much" for i in range(7)], start=start)


def overflow(space, messages, capture, start=T0 + timedelta(hours=1), step=timedelta(minutes=1)):
    """Record `messages` after a full STM, then push 7 fillers so they all leave STM and get placed."""
    with capture(execute=True):
        builders.turns(space, messages=messages, start=start, step=step)
        builders.turns(space, messages=[f"later chat {i}" for i in range(7)], start=start + timedelta(hours=5))


def segment_of(message: str) -> int | None:
    return Page.objects.get(user_message=message).segment_id


def test_an_evicted_page_starts_a_segment_when_mid_term_memory_is_empty(space, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        builders.turns(space, messages=[HIKING[0]] + [f"filler {i}" for i in range(7)])
    page = Page.objects.get(user_message=HIKING[0])
    assert page.tier == Tier.MID_TERM
    segment = page.segment
    assert segment is not None
    assert segment.l_interaction == 1
    assert "hiking" in segment.keywords or "mountain" in segment.keywords
    assert HeatSample.objects.filter(segment=segment, event=HeatEvent.CREATED).count() == 1


def test_pages_on_one_topic_share_a_segment_and_another_topic_starts_its_own(space, django_capture_on_commit_callbacks):
    fill_stm(space)
    overflow(space, HIKING + BAKING, django_capture_on_commit_callbacks)
    hiking = {segment_of(m) for m in HIKING}
    baking = {segment_of(m) for m in BAKING}
    assert len(hiking) == 1 and None not in hiking
    assert len(baking) == 1 and None not in baking
    assert hiking != baking
    assert Segment.objects.get(pk=hiking.pop()).l_interaction == 3


def test_joining_refreshes_the_summary_and_keywords_from_the_pages(space, django_capture_on_commit_callbacks):
    fill_stm(space)
    overflow(space, HIKING, django_capture_on_commit_callbacks)
    segment = Segment.objects.get(pk=segment_of(HIKING[0]))
    member_summaries = set(Page.objects.filter(segment=segment).values_list("topic_summary", flat=True))
    assert segment.summary in member_summaries
    assert {"rex", "dog"} & set(segment.keywords)
    assert HeatSample.objects.filter(segment=segment, event=HeatEvent.MERGED).count() == 2


def test_a_locked_segment_takes_pages_but_keeps_its_summary(space, django_capture_on_commit_callbacks):
    fill_stm(space)
    overflow(space, HIKING[:1], django_capture_on_commit_callbacks)
    segment = Segment.objects.get(pk=segment_of(HIKING[0]))
    builders.segment_lock(segment, summary="Hiking (set by an operator)")
    overflow(space, HIKING[1:], django_capture_on_commit_callbacks, start=T0 + timedelta(days=1))
    segment.refresh_from_db()
    assert segment_of(HIKING[1]) == segment.id
    assert segment.summary == "Hiking (set by an operator)"


def test_consecutive_pages_on_one_topic_form_a_chain_with_one_shared_summary(space, django_capture_on_commit_callbacks):
    fill_stm(space)
    overflow(space, HIKING, django_capture_on_commit_callbacks)
    first, second, third = (Page.objects.get(user_message=m) for m in HIKING)
    assert first.prev_page is None
    assert second.prev_page_id == first.id and third.prev_page_id == second.id
    assert first.chain_summary == second.chain_summary == third.chain_summary != ""


def test_a_page_after_a_long_gap_starts_a_new_chain(space, django_capture_on_commit_callbacks):
    fill_stm(space)
    overflow(space, HIKING[:2], django_capture_on_commit_callbacks, step=timedelta(hours=3))
    assert Page.objects.get(user_message=HIKING[1]).prev_page_id is None


def test_the_chain_continues_across_separate_runs_because_links_live_in_the_database(
    space, django_capture_on_commit_callbacks
):
    fill_stm(space)
    with django_capture_on_commit_callbacks(execute=True):
        builders.turn(space, user_message=HIKING[0], at=T0 + timedelta(hours=1))
        builders.turn(space, user_message=HIKING[1], at=T0 + timedelta(hours=1, minutes=1))
        builders.turns(space, messages=[f"filler {i}" for i in range(6)], start=T0 + timedelta(hours=1, minutes=2))
    # a fresh process would see only the database: nothing is carried in memory between runs
    first = Page.objects.get(user_message=HIKING[0])
    assert first.segment_id is not None
    with django_capture_on_commit_callbacks(execute=True):
        builders.turn(space, user_message="filler again", at=T0 + timedelta(hours=1, minutes=9))
    second = Page.objects.get(user_message=HIKING[1])
    assert second.prev_page_id == first.id


def test_every_page_sits_in_exactly_one_segment_and_running_twice_changes_nothing(
    space, django_capture_on_commit_callbacks
):
    fill_stm(space)
    overflow(space, HIKING + BAKING, django_capture_on_commit_callbacks)
    placed = Page.objects.filter(tier=Tier.MID_TERM)
    before = sorted(Segment.objects.values_list("id", "l_interaction", "summary"))
    report = pages_place(page_id=placed.order_by("-seq").first().id)
    assert report.placed_page_ids == []
    assert sorted(Segment.objects.values_list("id", "l_interaction", "summary")) == before
    assert not placed.filter(segment__isnull=True).exists()


def test_a_page_deleted_before_its_task_runs_is_skipped_quietly(space, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        builders.turns(space, messages=[f"message {i}" for i in range(8)])
    Page.objects.filter(user_message="message 0").delete()
    for callback in callbacks:
        callback()
    assert not Segment.objects.exists()


def test_past_capacity_the_coldest_unpinned_segment_is_evicted(space, settings):
    settings.MEMORY_MTM_CAPACITY = 2
    now = T0 + timedelta(days=10)
    warm = builders.segment(space, summary="warm", l_interaction=3, last_touched_at=now)
    coldest_pinned = builders.segment(space, summary="pinned", pinned=True, last_touched_at=T0)
    cold = builders.segment(space, summary="cold", l_interaction=1, last_touched_at=T0)
    builders.page(space, user_message="old", assistant_reply="x", at=T0, segment=cold)
    assert segments_evict_past_capacity(space=space, now=now) == [cold.id]
    assert set(Segment.objects.values_list("id", flat=True)) == {warm.id, coldest_pinned.id}
    assert not Page.objects.filter(user_message="old").exists()
    event = MemoryEvent.objects.get(kind=EventKind.EVICTION)
    assert event.target_id == cold.id and event.detail["removed_pages"] == 1


def test_pinned_segments_are_never_evicted_even_when_all_are_cold(space, settings):
    settings.MEMORY_MTM_CAPACITY = 1
    for name in ("a", "b"):
        builders.segment(space, summary=name, pinned=True, last_touched_at=T0)
    assert segments_evict_past_capacity(space=space, now=T0) == []
    assert Segment.objects.count() == 2


def chain_answer(topic: str, continues: bool = False) -> str:
    return json.dumps(
        {"continues": continues, "chain_summary": topic, "topic_summary": topic, "keywords": ["hiking", "dog", "rex"]}
    )


@pytest.fixture
def llm_mode(settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"


def test_garbage_from_the_llm_leaves_memory_unchanged_and_records_a_retryable_failure(
    space, llm_mode, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        builders.turns(space, messages=[HIKING[0]] + [f"filler {i}" for i in range(7)])
    page = Page.objects.get(user_message=HIKING[0])
    with use_llm(ScriptedLLM(["not json at all", '{"continues": "maybe"}'])), pytest.raises(StepFailed) as failure:
        pages_place(page_id=page.id)
    assert failure.value.retryable
    page.refresh_from_db()
    assert page.segment_id is None and page.topic_summary == "" and page.embedding is None
    assert not Segment.objects.exists()
    event = MemoryEvent.objects.get(kind=EventKind.STM_OVERFLOW)
    assert (event.status, event.llm_calls, event.mode) == (EventStatus.FAILED, 2, "llm")
    assert "not json at all" not in Page.objects.get(pk=page.pk).chain_summary


def test_an_llm_outage_is_retried_later_and_then_places_the_page(space, llm_mode, django_capture_on_commit_callbacks):
    from memory.llm import LLMError

    with django_capture_on_commit_callbacks(execute=False):
        builders.turns(space, messages=[HIKING[0]] + [f"filler {i}" for i in range(7)])
    page = Page.objects.get(user_message=HIKING[0])
    with use_llm(ScriptedLLM([LLMError("connection refused", retryable=True)])), pytest.raises(StepFailed):
        pages_place(page_id=page.id)
    assert Page.objects.get(pk=page.pk).segment_id is None
    with use_llm(ScriptedLLM([chain_answer("Hiking with Rex in the mountains.")])):
        report = pages_place(page_id=page.id)
    assert report.placed_page_ids == [page.id]
    page.refresh_from_db()
    assert page.segment.summary == "Hiking with Rex in the mountains."
    assert MemoryEvent.objects.filter(kind=EventKind.STM_OVERFLOW, status=EventStatus.OK).get().llm_calls == 1


def test_the_llm_places_a_page_with_one_call(space, llm_mode, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        builders.turns(space, messages=[HIKING[0]] + [f"filler {i}" for i in range(7)])
    llm = ScriptedLLM([chain_answer("Hiking with Rex.")])
    with use_llm(llm):
        pages_place(page_id=Page.objects.get(user_message=HIKING[0]).id)
    assert len(llm.calls) == 1
