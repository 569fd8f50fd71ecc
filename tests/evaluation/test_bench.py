"""memory_bench: its fakes answer the memory steps validly, its clock splits nested tasks, and a small run."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from itertools import pairwise

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from evaluation.bench.data import LONG_REPLY_CHARS, LONG_TURN_SHARE, Vectors, full_users_build
from evaluation.bench.fakes import BenchEmbedder, BenchLLM
from evaluation.bench.run import TaskClock, questions_drawn
from evaluation.bench.synthetic_text import TOPICS, TextGenerator
from memory.llm import use_llm
from memory.models import KnowledgeEntry, Page, PagePassage, Segment, Tenant
from memory.steps.model_steps import LLMSteps
from memory.steps.types import TurnText
from memory.text import passage_spans
from tests import builders

AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_the_bench_llm_answers_each_memory_step_with_valid_json():
    llm, steps = BenchLLM(), LLMSteps()
    first = TurnText("I hiked the Eagle Ridge trail with Maya on Sunday.", "Pack extra water next time.", AT)
    second = TurnText("My new hiking boots gave me blisters on the trail.", "Wool socks help.", AT)
    with use_llm(llm):
        chain = steps.chain_and_topic(previous=first, previous_chain_summary="Hiking.", page=second, similarity=0.7)
        profile = steps.profile_update(profile="", pages=[first, second])
        facts = steps.knowledge_extract(pages=[first, second])

    assert chain.continues is True
    assert chain.topic_summary.startswith("My new hiking boots")
    assert "hiking" in chain.keywords or "boots" in chain.keywords
    assert "Eagle Ridge" in profile
    assert facts.user[0] == "2026-01-05: The user said: I hiked the Eagle Ridge trail with Maya on Sunday."
    assert llm.calls == 3 == steps.usage.calls  # one call per step: no answer was malformed
    assert llm.calls_by_step == {"chain_and_topic": 1, "profile_update": 1, "knowledge_extract": 1}


def test_the_bench_llm_answers_the_combined_steps_with_valid_json():
    llm, steps = BenchLLM(), LLMSteps()
    first = TurnText("I hiked the Eagle Ridge trail with Maya on Sunday.", "Pack extra water next time.", AT)
    second = TurnText("My new hiking boots gave me blisters on the trail.", "Wool socks help.", AT)
    with use_llm(llm):
        chains = steps.chain_and_topics(
            previous=None, previous_chain_summary="", pages=[first, second], similarities=[None, 0.7]
        )
        findings = steps.promotion_analyse(profile="", pages=[first, second])

    assert [c.continues for c in chains] == [False, True]
    assert chains[1].topic_summary.startswith("My new hiking boots")
    assert "Eagle Ridge" in findings.profile and findings.facts.user
    assert llm.calls_by_step == {"chain_and_topics": 1, "promotion_analyse": 1}


def test_bench_vectors_are_unit_length_and_closer_within_a_topic():
    embedder = BenchEmbedder(name="local:all-MiniLM-L6-v2", dimension=384)
    generator = TextGenerator(1)
    hiking, cooking = TOPICS[0], TOPICS[1]
    texts = [" ".join(generator.turn(hiking)), " ".join(generator.turn(hiking)), " ".join(generator.turn(cooking))]
    vectors = embedder.embed(texts)

    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > 0.4 > vectors[0] @ vectors[2]
    assert np.allclose(embedder.embed(texts[:1])[0], vectors[0])  # deterministic


def test_the_task_clock_subtracts_a_nested_task_from_its_parent(monkeypatch):
    ticks = iter([0.0, 1.0, 1.5, 3.0])  # parent starts, child starts, child ends, parent ends (seconds)
    monkeypatch.setattr("evaluation.bench.run.perf_counter", lambda: next(ticks))
    clock, parent, child = TaskClock(), type("T", (), {"name": "parent"}), type("T", (), {"name": "child"})

    clock.started()
    clock.started()
    clock.finished(task=child)
    clock.finished(task=parent)

    assert clock.own == {"child": [500.0], "parent": [2500.0]}
    assert clock.take_top_level_ms() == 3000.0
    assert clock.take_top_level_ms() == 0.0


@pytest.mark.slow  # a bench run, small
@pytest.mark.django_db(transaction=True)
def test_a_small_bench_run_writes_every_figure_and_removes_its_tenant(tmp_path, settings):
    settings.MEMORY_MTM_CAPACITY = 6
    settings.MEMORY_KNOWLEDGE_CAPACITY = 5
    settings.MEMORY_PLACEMENT_BATCH = 2
    out = tmp_path / "bench.json"

    call_command(
        "memory_bench",
        *("--users", "2", "--turns", "40", "--samples", "5", "--fake-embeddings", "--tenant", "bench-test"),
        *("--out", str(out), "--no-progress"),
    )

    bench = json.loads(out.read_text())
    assert bench["users"] == 2 and bench["interleave"] == 1
    assert bench["long_turn_share"] == LONG_TURN_SHARE and bench["passages_per_user"] > 0  # long replies, as in use
    # the shape counted in the database: every segment of the full MTM holds 20 to 40 pages
    assert bench["segments_per_user"] == settings.MEMORY_MTM_CAPACITY
    per_segment = bench["pages_per_segment"]
    assert 20 <= per_segment["min"] <= per_segment["mean"] <= per_segment["max"] <= 40
    assert bench["machine"]["postgresql_shared_buffers"].endswith("B")  # e.g. 128MB: retrieval depends on it
    assert bench["machine"]["postgresql_huge_pages"] in ("on", "off")  # and on whether that cache is in huge pages
    for key in ("p50", "p95", "p99"):
        assert bench["retrieval_ms"][key] > 0 and bench["retrieval_cached_ms"][key] > 0  # first asked, and again
    assert bench["retrieval_ms"]["samples"] == bench["retrieval_cached_ms"]["samples"] == 5
    assert bench["record_turn_ms"]["p95"] > 0
    # rendered, and answered 200 (or the run fails)
    for page in ("console_user_page_ms", "end_user_page_ms", "end_user_plain_page_ms"):
        assert bench[page]["p95"] > 0 and bench[page]["samples"] == 5 and "templates" in bench[page]["note"]
    assert bench["exact_top10_ms"]["samples"] == 5 and bench["exact_top10_cached_ms"]["p95"] > 0
    ratios = bench["ratios"]
    assert ratios["retrieval_warm"] > 0 and ratios["retrieval_cold"] > 0 and ratios["end_user_page"] > 0
    proxy = bench["proxy"]
    assert proxy["overhead_ms"]["samples"] == proxy["first_token_overhead_ms"]["samples"] == 5
    assert ratios["proxy_overhead_ms_p95"] == proxy["overhead_ms"]["p95"] and proxy["proxied_ms"]["p95"] > 0
    # the overhead in direct calls: steadier than milliseconds on a machine whose speed comes and goes
    assert ratios["proxy_overhead_over_direct_p50"] == round(proxy["overhead_ms"]["p50"] / proxy["direct_ms"]["p50"], 2)
    assert len(bench["machine"]["load_average"]["before"]) == 3
    # a warm run reads the database through before each phase that reads users' rows, and says what it found
    assert [read["phase"] for read in bench["os_cache"]] == ["retrieval", "user pages", "proxy"]
    for read in bench["os_cache"]:
        timed = ("read_us_before", "read_us_after", "read_us_at_end")
        assert "skipped" in read or all(read[key] > 0 for key in timed)
    assert bench["ingest"]["turns"] == 40
    assert bench["ingest"]["pages_stored"] == 40
    assert bench["ingest_cost_last_over_first"] > 0
    # one call per two pages that left STM (the last one alone), plus one per promotion
    ingest, left_stm = bench["ingest"], 40 - settings.MEMORY_STM_CAPACITY
    by_step = ingest["llm_calls_by_step"]
    assert by_step.get("chain_and_topics", 0) == left_stm // 2 and by_step.get("chain_and_topic", 0) == left_stm % 2
    assert by_step.get("promotion_analyse", 0) == ingest["promotions"]
    assert ingest["llm_calls"] == sum(by_step.values())
    assert bench["llm_calls_per_stored_turn"] == round(ingest["llm_calls"] / 40, 3)
    assert 0 < bench["stm_overflow_task_ms"]["samples"] <= 5  # a page leaving STM may wait for a second one
    assert not Tenant.objects.filter(slug="bench-test").exists()
    assert Page.objects.count() == Segment.objects.count() == KnowledgeEntry.objects.count() == 0


@pytest.mark.slow  # a bench run, small
@pytest.mark.django_db(transaction=True)
def test_a_kept_bench_tenant_holds_full_users(tmp_path, settings):
    settings.MEMORY_MTM_CAPACITY = 4
    settings.MEMORY_KNOWLEDGE_CAPACITY = 3

    call_command(
        "memory_bench",
        *("--users", "1", "--turns", "10", "--samples", "2", "--fake-embeddings", "--tenant", "bench-kept"),
        *("--keep", "--out", str(tmp_path / "bench.json"), "--no-progress"),
    )

    tenant = Tenant.objects.get(slug="bench-kept")
    user = tenant.end_users.get(external_id="bench-user-00000")
    assert KnowledgeEntry.objects.filter(end_user=user).count() == 2 * 3
    space = user.memory_spaces.get()
    assert Page.objects.filter(space=space, tier="stm").count() == settings.MEMORY_STM_CAPACITY
    assert Page.objects.filter(space=space, tier="mtm", segment__isnull=True).count() == 0
    page = Page.objects.filter(space=space, tier="mtm").order_by("seq").first()  # written by binary COPY
    assert page.created_at is not None and page.source_meta == {} and page.keywords
    assert np.linalg.norm(page.embedding) == pytest.approx(1.0, abs=builders.HALF_PRECISION)
    assert page.topic_embedding is None and np.array_equal(page.topic_vector, page.embedding)  # stored once
    assert Page.objects.filter(space=space).filter(embedding__isnull=False).count() > 0


@pytest.mark.slow  # a bench run, small
@pytest.mark.django_db(transaction=True)
def test_a_kept_tenant_is_measured_again_without_building_new_users(tmp_path, settings):
    settings.MEMORY_MTM_CAPACITY = 4
    settings.MEMORY_KNOWLEDGE_CAPACITY = 3
    common = ("--turns", "10", "--samples", "2", "--fake-embeddings", "--tenant", "bench-again", "--no-progress")
    call_command("memory_bench", "--users", "2", "--keep", *common, "--out", str(tmp_path / "built.json"))

    call_command("memory_bench", "--reuse", *common, "--out", str(tmp_path / "again.json"))

    again = json.loads((tmp_path / "again.json").read_text())
    assert again["users"] == 2 and again["reused"] is True and again["build_seconds"] == 0
    assert again["retrieval_ms"]["p95"] > 0
    tenant = Tenant.objects.get(slug="bench-again")
    assert tenant.end_users.filter(external_id__startswith="bench-user-").count() == 2
    assert tenant.end_users.filter(external_id__startswith="bench-ingest-").count() == 2  # one per run


def test_a_seed_asks_the_same_users_the_same_questions_whatever_order_the_spaces_come_in():
    spaces = {space_id: f"space {space_id}" for space_id in (5, 3, 9, 1)}
    backwards = dict(reversed(list(spaces.items())))
    first = questions_drawn(spaces, 6, random.Random(7), TextGenerator(1))
    again = questions_drawn(backwards, 6, random.Random(7), TextGenerator(1))
    assert first == again and len({space for space, _ in first}) > 1


@pytest.mark.django_db
def test_reusing_needs_a_kept_tenant():
    with pytest.raises(CommandError, match="name it with --tenant"):
        call_command("memory_bench", "--reuse", "--fake-embeddings")
    with pytest.raises(CommandError, match="No kept benchmark users in tenant 'nowhere'"):
        call_command("memory_bench", "--reuse", "--tenant", "nowhere", "--fake-embeddings")


def _memories(tenant: Tenant) -> list[list[tuple]]:
    """Each built user's pages as (seq, message, tier), in seq order."""
    return [
        list(Page.objects.filter(space__end_user=user).order_by("seq").values_list("seq", "user_message", "tier"))
        for user in tenant.end_users.order_by("external_id")
    ]


def _users_built(target: Tenant, *, count: int = 4, **options) -> list:
    """`count` full users built in `target` with the bench's fakes, as large as the caller's settings make them."""
    vectors = Vectors(BenchEmbedder(name="bench", dimension=384, seed=7))
    assistant = target.assistants.get(external_id="ava")
    now = datetime(2026, 11, 1, tzinfo=UTC)
    return full_users_build(
        tenant=target, assistant=assistant, count=count, vectors=vectors, seed=7, now=now, **options
    )


@pytest.mark.django_db
def test_interleaved_users_get_the_same_memories_with_their_pages_written_in_time_order_across_them(
    settings, tenant, other_tenant
):
    settings.MEMORY_MTM_CAPACITY = 3
    settings.MEMORY_KNOWLEDGE_CAPACITY = 2
    built = {
        interleave: _users_built(target, interleave=interleave)
        for target, interleave in ((tenant, 1), (other_tenant, 3))
    }

    assert _memories(tenant) == _memories(other_tenant)
    assert [u.pages for u in built[1]] == [u.pages for u in built[3]]
    group = [u.space_id for u in built[3][:3]]
    written = list(Page.objects.filter(space_id__in=group).order_by("id").values_list("space_id", "at"))
    assert [at for _, at in written] == sorted(at for _, at in written)  # one timeline across the three users
    switches = sum(1 for before, after in pairwise(written) if before[0] != after[0])
    assert switches > len(written) // 2  # the users' pages alternate, not lie in three runs
    assert KnowledgeEntry.objects.filter(end_user__tenant=other_tenant).count() == 4 * 2 * 2


@pytest.mark.django_db
def test_long_turns_get_passages_over_the_whole_reply_and_leave_the_other_pages_as_they_were(
    settings, tenant, other_tenant
):
    settings.MEMORY_MTM_CAPACITY = 3
    settings.MEMORY_KNOWLEDGE_CAPACITY = 2
    for target, share in ((tenant, 0.0), (other_tenant, 0.5)):
        _users_built(target, count=2, interleave=2, long_share=share)

    plain, mixed = _memories(tenant), _memories(other_tenant)
    assert plain == mixed  # the same turns in the same places: only some replies are longer
    assert not PagePassage.objects.filter(space__tenant=tenant).exists()
    long_pages = Page.objects.filter(space__tenant=other_tenant, passages__isnull=False).distinct()
    mid_term = Page.objects.filter(space__tenant=other_tenant, tier="mtm").count()
    assert 0.3 * mid_term < long_pages.count() < 0.7 * mid_term
    assert not long_pages.filter(tier="stm").exists()  # short-term pages have no vectors yet
    for page in long_pages:
        spans = list(page.passages.order_by("start").values_list("start", "end"))
        assert spans == passage_spans(page.memory_text) and len(spans) >= 2
        assert len(page.assistant_reply) >= LONG_REPLY_CHARS[0]
    passage = PagePassage.objects.filter(space__tenant=other_tenant).first()
    assert np.linalg.norm(passage.embedding) == pytest.approx(1.0, abs=builders.HALF_PRECISION)


def test_the_long_turn_share_is_a_share():
    with pytest.raises(CommandError, match="--long-turns is a share"):
        call_command("memory_bench", "--long-turns", "1.5", "--fake-embeddings")


def test_users_cannot_be_interleaved_in_groups_of_less_than_one():
    with pytest.raises(CommandError, match="--interleave must be at least 1"):
        call_command("memory_bench", "--interleave", "0", "--fake-embeddings")


def test_a_cold_run_is_refused_where_the_caches_cannot_be_emptied(settings):
    settings.EMBEDDED_DATABASE = False

    with pytest.raises(CommandError, match="with DATABASE_URL, restart your server instead"):
        call_command("memory_bench", "--cold", "--users", "1", "--samples", "1", "--out", "/dev/null")
