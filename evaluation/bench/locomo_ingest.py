"""Ingestion side by side with the reference MemoryOS: LoCoMo turns replayed into one user's memory with the real
embedder and an instant fake OpenAI-compatible server (evaluation.fake_llm) at the LLM seam, over real HTTP.

It measures what a stored turn costs us (recording plus the updating it causes, embedding included, the model
excluded because the fake answers at once), how that cost grows with the size of the memory, and how many model
calls each stored turn needs. The reference was measured the same way: the same turns, embedder and fake server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from time import perf_counter, process_time

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Sum
from django.utils import timezone
from tqdm import tqdm

from evaluation import locomo
from evaluation.bench.data import bench_tenant_delete
from evaluation.bench.fakes import BenchLLM
from evaluation.bench.run import BENCH_LLM_URL
from evaluation.fake_llm import fake_llm_server
from evaluation.scope import celery_eager, settings_changed
from evaluation.scoring import percentiles
from memory.embeddings import get_embedder
from memory.llm import use_llm
from memory.models import MemoryEvent, MemorySpace, Page, Segment
from memory.services.tenancy import end_user_create, tenant_create
from memory.services.turns import space_get_or_create, turn_record
from memory.services.updating import space_pending_place

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
WINDOW = 100
CHECKPOINTS = (1000, 5000)


@dataclass
class LocomoIngestOptions:
    turns: int = 1000
    data: Path = DEFAULT_DATA
    tenant_slug: str = ""  # empty: bench-locomo-<timestamp>
    keep: bool = False
    progress: bool | None = None
    llm: str = "http"  # "http": fake_llm over HTTP; "bench": BenchLLM in-process (topics from each page); "offline"


def replay_turns(samples: list[dict], count: int) -> list[locomo.LocomoTurn]:
    """`count` turns: the conversations one after another, again from the first (later in time) when they run out."""
    base = [turn for sample in samples for turn in locomo.conversation_turns(sample["conversation"])]
    if not base:
        raise ValueError("the LoCoMo file holds no turns")
    turns, offset = [], timedelta(0)
    span = max(t.at for t in base) - min(t.at for t in base) + timedelta(days=1)
    while len(turns) < count:
        turns.extend(
            locomo.LocomoTurn(t.user_message, t.assistant_reply, t.at + offset, t.session, list(t.dia_ids))
            for t in base[: count - len(turns)]
        )
        offset += span
    return turns


def _window(costs: list[float], end: int) -> dict:
    """The mean cost of the `WINDOW` turns ending at turn `end` (1-based), against the first window that evicts."""
    first_start = settings.MEMORY_STM_CAPACITY  # turns 8–107: the first 100 turns that push a page out of STM
    first = float(np.mean(costs[first_start : first_start + WINDOW]))
    last = float(np.mean(costs[end - WINDOW : end]))
    return {
        "turns": end,
        "first_window": f"{first_start + 1}-{first_start + WINDOW}",
        "first_window_mean_ms": round(first, 2),
        "last_window": f"{end - WINDOW + 1}-{end}",
        "last_window_mean_ms": round(last, 2),
        "last_over_first": round(last / first, 3),
    }


LLM_SEAMS = {
    "http": "evaluation.fake_llm over HTTP (instant, the same answer for every page)",
    "bench": "evaluation.bench.fakes.BenchLLM in-process (instant; each page's first sentence as its topic)",
    "offline": "none: the offline steps (no LLM_BASE_URL)",
}


@contextmanager
def _model_seam(kind: str) -> Iterator[None]:
    """The fake model for the run: the HTTP server (the cost of the real seam) or BenchLLM (realistic segments)."""
    if kind not in LLM_SEAMS:
        raise ValueError(f"--llm must be one of {', '.join(LLM_SEAMS)}")
    if kind == "offline":
        with settings_changed(LLM_BASE_URL=""):
            yield
        return
    if kind == "bench":
        with settings_changed(LLM_BASE_URL=BENCH_LLM_URL), use_llm(BenchLLM()):
            yield
        return
    with (
        fake_llm_server() as url,
        settings_changed(LLM_BASE_URL=url, LLM_API_KEY="fake"),
        use_llm(None),
        _quiet("httpx"),  # a line per request at INFO would bury the report
    ):
        yield


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(previous)


def segment_quality(space: MemorySpace) -> dict:
    """Segment count and the mean cosine of page vectors within one segment and between segments (placed pages)."""
    rows = list(
        Page.objects.filter(space=space, segment__isnull=False, embedding__isnull=False).values_list(
            "segment_id", "embedding"
        )
    )
    if len(rows) < 2:
        return {"segments": len({r[0] for r in rows}), "within": None, "between": None}
    segments = np.array([r[0] for r in rows])
    vectors = np.array([r[1] for r in rows], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    similarity = vectors @ vectors.T
    upper = np.triu_indices(len(rows), 1)
    same = (segments[:, None] == segments[None, :])[upper]
    within = float(similarity[upper][same].mean()) if same.any() else None
    between = float(similarity[upper][~same].mean()) if (~same).any() else None
    sizes = np.unique(segments, return_counts=True)[1]
    return {
        "segments": len(sizes),
        "pages_per_segment_mean": round(float(sizes.mean()), 2),
        "singleton_segments": int((sizes == 1).sum()),
        "within": round(within, 4) if within is not None else None,
        "between": round(between, 4) if between is not None else None,
    }


def locomo_ingest_bench(options: LocomoIngestOptions) -> dict:
    """Replay `turns` LoCoMo turns into one new user's memory and report the cost per stored turn and its growth.

    Side effects: a fresh tenant for the run, deleted afterwards unless `keep`. Needs the local embedder's model.
    """
    if options.turns < settings.MEMORY_STM_CAPACITY + WINDOW:
        raise ValueError(f"--turns must be at least {settings.MEMORY_STM_CAPACITY + WINDOW} for a window of {WINDOW}")
    turns = replay_turns(locomo.load(options.data), options.turns)
    get_embedder().embed(["warm the model up"])  # loading the model is not a stored turn's cost
    slug = options.tenant_slug or f"bench-locomo-{timezone.now():%Y%m%d-%H%M%S-%f}"  # two runs never share one
    tenant = tenant_create(slug=slug, name=f"LoCoMo ingest {slug}")
    try:
        with _model_seam(options.llm), celery_eager():
            result = _replay(tenant, turns, options)
    finally:
        if not options.keep:
            bench_tenant_delete(tenant=tenant)
    result.update(
        {
            "data": str(options.data),
            "embedder": get_embedder().name,
            "llm": LLM_SEAMS[options.llm],
            "placement_batch": settings.MEMORY_PLACEMENT_BATCH,
            "topic_vector": settings.MEMORY_TOPIC_VECTOR,
            "tenant": slug,
            "kept": options.keep,
            "generated_at": timezone.now().isoformat(timespec="seconds"),
        }
    )
    return result


def _backend_cpu_seconds() -> float | None:
    """CPU time spent so far by this connection's PostgreSQL backend (Linux /proc; None where it cannot be read).

    On a shared machine wall time mostly measures the queue for the CPU; CPU time measures the work.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _replay(tenant, turns: list[locomo.LocomoTurn], options: LocomoIngestOptions) -> dict:
    end_user = end_user_create(tenant=tenant, external_id="locomo-replay", display_name="LoCoMo replay")
    assistant = tenant.assistants.get(external_id="ava")
    costs, cpu_costs = [], []
    started = perf_counter()
    for turn in tqdm(turns, desc="LoCoMo ingest", unit="turn", disable=options.progress is False):
        backend_before, cpu_before, begun = _backend_cpu_seconds(), process_time(), perf_counter()
        turn_record(
            end_user=end_user,
            assistant=assistant,
            user_message=turn.user_message,
            assistant_reply=turn.assistant_reply,
            at=turn.at,
        )
        costs.append((perf_counter() - begun) * 1000)
        cpu, backend_after = process_time() - cpu_before, _backend_cpu_seconds()
        if backend_before is not None and backend_after is not None and backend_after >= backend_before:
            cpu += backend_after - backend_before
        cpu_costs.append(cpu * 1000)
    seconds = perf_counter() - started
    space = space_get_or_create(end_user=end_user, assistant=assistant)
    space_pending_place(space_id=space.id)  # the last pages, short of a batch: their calls count too
    ends = [end for end in (*CHECKPOINTS, len(costs)) if end <= len(costs)]
    return {
        "turns": len(turns),
        "seconds": round(seconds, 1),
        "turns_per_second": round(len(turns) / seconds, 1),
        "cost_ms": percentiles(costs[settings.MEMORY_STM_CAPACITY :], (50, 95, 99)),
        "growth": [_window(costs, end) for end in dict.fromkeys(ends)],
        "cpu_note": "CPU ms per stored turn: this process (all threads, the fake server's included) plus its "
        "PostgreSQL backend",
        "cpu_cost_ms": percentiles(cpu_costs[settings.MEMORY_STM_CAPACITY :], (50, 95, 99)),
        "cpu_growth": [_window(cpu_costs, end) for end in dict.fromkeys(ends)],
        **_memory_figures(space, len(turns)),
    }


def _memory_figures(space: MemorySpace, turns: int) -> dict:
    events = MemoryEvent.objects.filter(space=space)
    calls = events.aggregate(n=Sum("llm_calls"))["n"] or 0
    by_kind = dict(events.values("kind").annotate(n=Sum("llm_calls")).filter(n__gt=0).values_list("kind", "n"))
    return {
        "llm_calls": calls,
        "llm_calls_by_event": by_kind,
        "llm_calls_per_stored_turn": round(calls / turns, 3),
        "pages_stored": Page.objects.filter(space=space).count(),
        "segments": Segment.objects.filter(space=space).count(),
        "segment_quality": segment_quality(space),
    }
