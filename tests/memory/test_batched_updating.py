"""Placement that costs less: pages leaving STM together share one model call and one embedding pass, and a
placement reads only what it changed (a bounded number of queries whatever the size of the space)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory.embeddings import use_embedder
from memory.llm import use_llm
from memory.models import Page, Segment
from memory.models.job_leases import JobKind, JobLease
from memory.models.tiers import Tier
from memory.services.updating import pages_place, segments_promote_hot
from memory.steps.model_steps import CHAIN_SYSTEM, CHAINS_SYSTEM
from memory.steps.types import StepFailed
from tests import builders
from tests.builders import T0
from tests.fakes import HashingEmbedder, ScriptedLLM

TURNS = [
    "I went hiking in the mountains with my dog Rex, the mountain trail was steep.",
    "Rex loved the mountain trail, hiking with my dog is the best part of the week.",
    "I baked sourdough bread today, the sourdough starter finally worked in the oven.",
    "My sourdough bread came out of the oven with a great crust, baking is fun.",
    "Next weekend I plan more hiking on the mountain trail with Rex my dog.",
    "filler one about nothing much",
    "filler two about nothing much",
]


def chain_entry(topic: str, *, continues: bool = False) -> dict:
    return {"continues": continues, "chain_summary": topic, "topic_summary": topic, "keywords": topic.lower().split()}


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: list[str]):
        self.texts.extend(texts)
        return super().embed(texts)


@pytest.fixture
def llm_mode(settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"


def fill_stm(space):
    builders.turns(space, messages=[f"filler {i} about nothing much" for i in range(7)], start=T0 - timedelta(days=1))


def pending(space) -> list[Page]:
    return list(Page.objects.filter(space=space, tier=Tier.MID_TERM, segment__isnull=True).order_by("seq"))


def test_a_page_leaving_stm_waits_until_a_batch_is_ready_then_both_are_placed_with_one_model_call(
    space, settings, llm_mode, django_capture_on_commit_callbacks
):
    settings.MEMORY_PLACEMENT_BATCH = 2
    fill_stm(space)
    llm = ScriptedLLM([json.dumps({"pages": [chain_entry("filler zero"), chain_entry("filler one")]})])
    with use_llm(llm), django_capture_on_commit_callbacks(execute=True) as callbacks:
        builders.turns(space, messages=[TURNS[0]], start=T0)
        assert len(pending(space)) == 1 and not callbacks  # no placement queued for a lone page
        builders.turns(space, messages=[TURNS[1]], start=T0 + timedelta(minutes=1))
    assert len(llm.calls) == 1 and llm.calls[0][0]["content"] == CHAINS_SYSTEM
    assert pending(space) == []
    placed = Page.objects.filter(space=space, tier=Tier.MID_TERM).order_by("seq")
    assert [p.topic_summary for p in placed] == ["filler zero", "filler one"]


def test_one_pending_page_is_asked_about_as_a_single_page(space, llm_mode):
    fill_stm(space)
    builders.turns(space, messages=[TURNS[0]], start=T0)
    llm = ScriptedLLM([json.dumps(chain_entry("filler zero"))])
    with use_llm(llm):
        pages_place(page_id=pending(space)[0].id, now=T0)
    assert len(llm.calls) == 1 and llm.calls[0][0]["content"] == CHAIN_SYSTEM


def test_a_batched_answer_with_too_few_pages_is_asked_for_again_and_a_second_one_stores_nothing(space, llm_mode):
    fill_stm(space)
    builders.turns(space, messages=TURNS[:2], start=T0)
    short = json.dumps({"pages": [chain_entry("filler zero")]})
    llm = ScriptedLLM([short, short])
    with use_llm(llm), pytest.raises(StepFailed):
        pages_place(page_id=pending(space)[-1].id, now=T0)
    assert "exactly 2 entries" in llm.calls[1][-1]["content"]
    assert len(pending(space)) == 2 and not Segment.objects.filter(space=space).exists()


def test_the_first_page_of_a_batch_never_continues_without_a_previous_page(space, llm_mode):
    fill_stm(space)
    builders.turns(space, messages=TURNS[:2], start=T0)
    answer = {"pages": [chain_entry("hiking", continues=True), chain_entry("hiking with rex", continues=True)]}
    with use_llm(ScriptedLLM([json.dumps(answer)])):
        pages_place(page_id=pending(space)[-1].id, now=T0)
    first, second = Page.objects.filter(space=space, tier=Tier.MID_TERM).order_by("seq")
    assert first.prev_page_id is None and second.prev_page_id == first.id
    assert first.chain_summary == second.chain_summary == "hiking with rex"  # the chain shows its latest summary


def placed_memory(space) -> list[tuple]:
    pages = Page.objects.filter(space=space, tier=Tier.MID_TERM).order_by("seq")
    groups = {}
    for page in pages:
        groups.setdefault(page.segment_id, []).append(page.user_message)
    segments = Segment.objects.filter(space=space).order_by("id")
    chains = [(p.user_message, p.chain_summary, p.topic_summary, tuple(p.keywords)) for p in pages]
    return [chains, [(s.summary, tuple(s.keywords), tuple(groups[s.id])) for s in segments]]


def test_offline_placing_pages_together_gives_the_memory_that_placing_them_one_by_one_gives(
    space, other_space, settings, django_capture_on_commit_callbacks
):
    for target, batch in ((space, 1), (other_space, 3)):
        settings.MEMORY_PLACEMENT_BATCH = batch
        fill_stm(target)
        with django_capture_on_commit_callbacks(execute=True):
            builders.turns(target, messages=TURNS * 2, start=T0)
        if pending(target):
            pages_place(page_id=pending(target)[-1].id, now=T0)
    assert placed_memory(space) == placed_memory(other_space)


def test_a_placement_embeds_each_page_once_even_with_a_model_writing_topics(space, llm_mode):
    fill_stm(space)
    builders.turns(space, messages=TURNS[:3], start=T0)
    answer = {"pages": [chain_entry("hiking"), chain_entry("hiking rex"), chain_entry("baking")]}
    with use_embedder(CountingEmbedder()) as embedder, use_llm(ScriptedLLM([json.dumps(answer)])):
        pages_place(page_id=pending(space)[-1].id, now=T0)
    assert len(embedder.texts) == 3  # the pages; each page's vector is also its topic vector


def test_a_page_whose_topic_vector_is_its_own_vector_stores_it_once(space):
    fill_stm(space)
    builders.turns(space, messages=TURNS[:1], start=T0)
    pages_place(page_id=pending(space)[-1].id, now=T0)
    placed = Page.objects.filter(space=space, segment__isnull=False).get()
    assert placed.topic_embedding is None
    assert builders.same_page_vector(placed.embedding, placed.segment.embedding)  # the new segment took its vector


def test_with_topic_summary_vectors_the_topics_are_embedded_in_one_batch(space, settings, llm_mode):
    settings.MEMORY_TOPIC_VECTOR = "summary"
    fill_stm(space)
    builders.turns(space, messages=TURNS[:2], start=T0)
    answer = {"pages": [chain_entry("hiking"), chain_entry("baking")]}
    with use_embedder(CountingEmbedder()) as embedder, use_llm(ScriptedLLM([json.dumps(answer)])):
        pages_place(page_id=pending(space)[-1].id, now=T0)
    assert embedder.texts[2:] == ["hiking", "baking"]
    stored = Page.objects.filter(space=space, segment__isnull=False).order_by("seq")
    assert all(page.topic_embedding is not None for page in stored)  # a summary's vector differs: it is stored


def placement_queries(space, message: str, capture) -> tuple[int, Page]:
    """The queries of placing one page about `message` (it leaves STM when seven more turns follow it)."""
    builders.turns(space, messages=[message] + [f"filler {i} about nothing much" for i in range(7)], start=T0)
    page = pending(space)[0]
    with capture() as context:
        pages_place(page_id=page.id, now=T0)
    page.refresh_from_db()
    return len(context.captured_queries), page


def test_placing_a_page_costs_as_many_queries_in_a_space_with_forty_segments_as_in_one_with_one(
    space, other_space, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def capture():
        return CaptureQueriesContext(connection)

    for i in range(40):
        builders.segment_with_pages(space, summary=f"topic {i} words", messages=[f"page {i} {j}" for j in range(5)])
    builders.segment_with_pages(other_space, summary="topic 0 words", messages=[f"page 0 {j}" for j in range(5)])
    many, placed = placement_queries(space, TURNS[0], capture)
    one, _ = placement_queries(other_space, TURNS[0], capture)
    assert placed.segment_id is not None and many == one


def test_joining_a_segment_runs_twelve_queries_and_twelve_more_for_its_lease_lock_and_transaction(
    space, django_assert_max_num_queries
):
    hiking = builders.segment_with_pages(space, summary="hiking mountain trail rex dog", messages=[TURNS[0], TURNS[4]])
    builders.turns(space, messages=[TURNS[1]] + [f"filler {i} about nothing much" for i in range(7)], start=T0)
    page = pending(space)[0]
    with django_assert_max_num_queries(12 + 12):
        pages_place(page_id=page.id, now=T0)
    page.refresh_from_db()
    assert page.segment_id == hiking.id


def test_placement_looks_only_at_the_segments_it_touched_for_heat(space, django_capture_on_commit_callbacks):
    elsewhere = builders.segment_with_pages(space, summary="gardening roses", messages=["I grow roses."], n_visit=9)
    fill_stm(space)
    with django_capture_on_commit_callbacks(execute=False):
        builders.turns(space, messages=[TURNS[0]], start=T0)
        report = pages_place(page_id=pending(space)[0].id, now=T0)
    assert elsewhere.id not in report.hot_segment_ids
    with django_capture_on_commit_callbacks(execute=False):
        assert segments_promote_hot(space_id=space.id, segment_ids=[elsewhere.id], now=T0) == [elsewhere.id]
    assert JobLease.objects.filter(kind=JobKind.PROMOTION, target_id=elsewhere.id).exists()


def test_a_large_segment_looks_at_its_summary_and_keywords_again_sixteen_times_per_doubling(space):
    from memory.services.updating import _segment_refresh

    big = builders.segment_with_pages(space, summary="old summary", messages=[f"walk {i} park" for i in range(63)])
    refreshed = []
    for size in range(64, 80):
        page = builders.page(space, user_message=f"walk {size} park", segment=big)
        refreshed.append("summary" in _segment_refresh(Segment.objects.get(pk=big.pk), page))
        assert Page.objects.filter(segment=big).count() == size
    assert [64 + i for i, done in enumerate(refreshed) if done] == [64, 68, 72, 76]  # 64 to 127 pages: every 4th
