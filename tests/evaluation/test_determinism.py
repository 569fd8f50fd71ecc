"""The same conversation ingested twice gives the same memory and the same retrieval, turn for turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation import locomo
from evaluation.locomo_eval import conversation_ingest
from memory.models import MemorySpace, Page, Segment
from memory.retrieval.search import retrieve
from memory.services.tenancy import tenant_create

LOCOMO_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
SESSIONS = 4  # enough turns for several segments, promotions and facts, quick enough for the suite


def _sample() -> dict:
    sample = next(c for c in locomo.load(LOCOMO_DEV) if c["sample_id"] == "conv-26")
    conversation = {
        key: value
        for key, value in sample["conversation"].items()
        if not key.startswith("session_") or int(key.split("_")[1]) <= SESSIONS
    }
    return {**sample, "conversation": conversation}


def _memory(space: MemorySpace) -> list[tuple]:
    """Each segment by its pages' positions: summary, keywords, counters and the pages' seqs."""
    return [
        (
            segment.summary,
            list(segment.keywords),
            segment.l_interaction,
            list(Page.objects.filter(segment=segment).order_by("seq").values_list("seq", flat=True)),
        )
        for segment in Segment.objects.filter(space=space).order_by("id")
    ]


def _rankings(space: MemorySpace, questions: list[str]) -> list[list[tuple[int, float]]]:
    return [
        [(p.page.seq, round(p.fused, 12)) for p in retrieve(space=space, query=q, record_visits=False).ranked]
        for q in questions
    ]


@pytest.mark.slow  # a bench run, small
@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason=f"LoCoMo dev split not found at {LOCOMO_DEV}")
def test_ingesting_a_conversation_twice_gives_identical_segments_and_rankings(db, django_capture_on_commit_callbacks):
    sample = _sample()
    questions = [qa["question"] for qa in sample["qa"][:25]]
    spaces = []
    for slug in ("first", "second"):
        with django_capture_on_commit_callbacks(execute=True):
            spaces.append(conversation_ingest(tenant=tenant_create(slug=slug, name=slug), sample=sample))
    first, second = spaces
    assert len(_memory(first)) >= 3
    assert _memory(first) == _memory(second)
    assert _rankings(first, questions) == _rankings(second, questions)
