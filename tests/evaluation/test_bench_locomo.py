"""memory_bench --ingest-locomo: LoCoMo turns through the real pipeline, the real embedder and a fake model
server over HTTP, reporting the cost per stored turn, its growth and the model calls per stored turn."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.bench.locomo_ingest import DEFAULT_DATA, replay_turns
from evaluation.locomo import load
from memory.models import Page, Tenant

# The replay reads the LoCoMo dev split, which is kept outside the repository (../shared/data/locomo/).
needs_locomo = pytest.mark.skipif(not DEFAULT_DATA.exists(), reason=f"LoCoMo dev split not found at {DEFAULT_DATA}")


@needs_locomo
def test_a_replay_longer_than_the_data_starts_again_later_in_time():
    samples = load(DEFAULT_DATA)
    once = sum(len(replay_turns([s], 1)) for s in samples[:1])
    base = replay_turns(samples[:1], 10_000)
    first = [t for t in base if t.user_message == base[0].user_message]
    assert once == 1 and len(base) == 10_000
    assert len(first) >= 2 and first[1].at > first[0].at


@needs_locomo
@pytest.mark.slow  # a bench run, small
@pytest.mark.django_db(transaction=True)
def test_an_ingest_run_reports_cost_growth_and_calls_per_turn_and_removes_its_tenant(tmp_path, settings):
    settings.MEMORY_PLACEMENT_BATCH = 2
    out = tmp_path / "locomo.json"

    call_command(
        "memory_bench",
        *("--ingest-locomo", "--turns", "120", "--tenant", "bench-locomo-test", "--out", str(out), "--no-progress"),
    )

    result = json.loads(out.read_text())
    assert result["turns"] == 120 and result["pages_stored"] == 120
    assert result["growth"] == [{**result["growth"][0], "turns": 120, "first_window": "8-107", "last_window": "21-120"}]
    assert result["growth"][0]["last_over_first"] > 0
    assert result["cpu_growth"][0]["last_window"] == "21-120" and result["cpu_cost_ms"]["p50"] > 0
    calls = result["llm_calls_by_event"]
    assert calls["stm_overflow"] == (120 - settings.MEMORY_STM_CAPACITY + 1) // 2  # two pages a call, the last alone
    assert result["llm_calls"] == sum(calls.values())
    assert result["llm_calls_per_stored_turn"] == round(result["llm_calls"] / 120, 3)
    assert not Tenant.objects.filter(slug="bench-locomo-test").exists() and not Page.objects.exists()


@needs_locomo
@pytest.mark.slow  # a bench run, small
@pytest.mark.django_db(transaction=True)
def test_with_topics_from_each_page_the_replay_reports_segments_closer_within_than_between(tmp_path):
    out = tmp_path / "locomo.json"

    call_command(
        "memory_bench",
        *("--ingest-locomo", "--llm", "bench", "--turns", "120", "--out", str(out), "--no-progress"),
    )

    result = json.loads(out.read_text())
    quality = result["segment_quality"]
    assert "BenchLLM" in result["llm"] and quality["segments"] == result["segments"] > 1
    assert quality["within"] > quality["between"]


def test_an_ingest_run_too_short_for_a_window_is_refused():
    with pytest.raises(CommandError, match="at least 107"):
        call_command("memory_bench", "--ingest-locomo", "--turns", "50", "--no-progress")
