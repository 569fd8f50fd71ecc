"""The scale benchmark: full synthetic users, then latencies of the memory paths and the cost of growing memory.

Measured with the embedder and the LLM replaced at their seams by instant fakes (evaluation.bench.fakes), so
the figures are our code and our database. The updating tasks run in-process (Celery eager); Celery's task signals
time each task, and a task run inside another (a promotion queued by an overflow) is subtracted from its parent,
so recording a turn, the STM overflow task and promotion are timed apart.
"""

from __future__ import annotations

import contextlib
import gc
import os
import platform
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np
from django.conf import settings
from django.db import connection
from django.utils import timezone
from tqdm import tqdm

from evaluation.answering import MemoryContext, Speakers, memory_text
from evaluation.bench.baselines import alternated, caches_emptied, exact_top10_ms, ratio, spaces_halved
from evaluation.bench.data import (
    LONG_TURN_SHARE,
    BenchUser,
    Vectors,
    bench_tenant_delete,
    full_users_build,
    kept_users,
)
from evaluation.bench.fakes import BenchEmbedder, BenchLLM
from evaluation.bench.os_cache import database_files_read, page_table_read_us
from evaluation.bench.proxy_overhead import proxy_overhead
from evaluation.bench.synthetic_text import TOPICS, TextGenerator
from evaluation.bench.user_pages import user_pages_render
from evaluation.scope import celery_eager, celery_task_signals, settings_changed
from evaluation.scoring import percentiles
from memory.embeddings import use_embedder
from memory.llm import use_llm
from memory.models import (
    EmbeddingState,
    MemorySpace,
    Page,
    Segment,
    Tenant,
)
from memory.retrieval.result import RetrievalResult
from memory.retrieval.search import retrieve
from memory.services.tenancy import end_user_create, tenant_create
from memory.services.turns import space_get_or_create, turn_record
from memory.services.updating import space_pending_place
from memoryos_site.collector import site_loaded

BENCH_LLM_URL = "http://bench-llm.invalid/v1"  # never contacted: the seam holds BenchLLM
OVERFLOW_TASK = "memory.tasks.pages_place_task"
VISITS_TASK = "memory.tasks.segment_visits_count_task"
VISITS_NOTE = "the worker counting the visits one retrieval queued (run after each retrieval here, not batched)"
PROMOTE_TASK = "memory.tasks.segment_promote_task"
USER_PAGE_NOTE = (
    "the real pages: GET through Django's test client (URL routing, middleware, the view, its selectors and the "
    "templates), logged in, for a random full user; server-side time, no network or browser"
)
PROMPT_NOTE = "stand-in: the retrieved memory formatted in spec section 4 order (evaluation.answering)"
FIRST_TOUCH_NOTE = (
    "each question asked for the first time: its user's rows come from the OS cache or the disk unless an earlier "
    "question of the same user brought them into PostgreSQL's cache"
)
CACHED_NOTE = (
    "the same questions asked again, in the same order: their users' rows are in PostgreSQL's cache, as the rows of "
    "users who keep talking stay when shared_buffers can hold them"
)

EXACT_NOTE = (
    "the baseline: one exact pgvector top-10 over the user's pages (evaluation.bench.baselines), each question to a "
    "user of the other half, alternated with the retrievals"
)
EXACT_CACHED_NOTE = "the baseline for the questions asked again, alternated with them"
RATIOS_NOTE = (
    "p95 over the p95 of its baseline measured in the same run on the same rows (retrieval: one exact vector top-10; "
    "the end user's page: their password page, same layout); the proxy: milliseconds it adds to calling the same "
    "fake model over HTTP directly, p95 of the paired differences, and the p50 of those differences over the direct "
    "call's p50 (the direct call is Python and loopback HTTP only, so it slows and speeds up with the machine)"
)

P3 = (50, 95, 99)


@dataclass
class BenchOptions:
    users: int = 10
    turns: int = 1000
    samples: int = 200
    fake_embeddings: bool = False
    seed: int = 7
    tenant_slug: str = ""  # empty: bench-<timestamp>
    keep: bool = False
    progress: bool | None = None
    reuse: bool = False  # measure the users of the kept tenant `tenant_slug` instead of building new ones
    interleave: int = 1  # users whose pages are written interleaved in time (bench.data.full_users_build)
    cold: bool = False  # restart the database and drop the OS cache before the questions are first asked
    long_turns: float = LONG_TURN_SHARE  # share of mid-term turns with a long reply and passages (bench.data)


@dataclass
class TaskClock:
    """Own time of each task run (children subtracted), by task name, from Celery's task signals."""

    own: dict[str, list[float]] = field(default_factory=dict)
    top_level_ms: float = 0.0  # all tasks' time since last taken, nested ones counted once
    _stack: list[list[float]] = field(default_factory=list)  # [start, time spent in children]

    def started(self, **_) -> None:
        self._stack.append([perf_counter(), 0.0])

    def finished(self, task=None, **_) -> None:
        start, children = self._stack.pop()
        elapsed = perf_counter() - start
        self.own.setdefault(task.name, []).append((elapsed - children) * 1000)
        if self._stack:
            self._stack[-1][1] += elapsed
        else:
            self.top_level_ms += elapsed * 1000

    def take_top_level_ms(self) -> float:
        spent, self.top_level_ms = self.top_level_ms, 0.0
        return spent


@contextlib.contextmanager
def _tasks_timed(clock: TaskClock) -> Iterator[None]:
    """Run the updating tasks in this process, each timed by `clock`."""
    with celery_eager(), celery_task_signals(prerun=clock.started, postrun=clock.finished):
        yield


def _embedder(options: BenchOptions):
    """The fake embedder, named after the store's model so the model guard accepts it."""
    state = EmbeddingState.objects.order_by("id").first()
    name = state.model if state else f"local:{settings.EMBEDDING_MODEL}"
    dimension = state.dimension if state else 384
    return BenchEmbedder(name=name, dimension=dimension, seed=options.seed)


def memory_bench(options: BenchOptions) -> dict:
    """Build `users` full users in a fresh tenant, measure, and (unless `keep`) delete the tenant again.

    Side effects: writes benchmark fixture data into the database for the run (see evaluation.bench.data).
    """
    started, load_before = perf_counter(), _load_average()
    fake = _embedder(options)
    source = fake if options.fake_embeddings else None
    llm, clock = BenchLLM(), TaskClock()
    tenant = _tenant(options)
    assistant = tenant.assistants.get(external_id="ava")
    try:
        users, build_seconds = (_kept(tenant), 0.0) if options.reuse else _build(tenant, assistant, options, source)
        shape = memory_shape(users)
        with use_embedder(fake), use_llm(llm), settings_changed(LLM_BASE_URL=BENCH_LLM_URL), _tasks_timed(clock):
            result = _measure(tenant, users, options, llm, clock)
    finally:
        gc.unfreeze()
        if not (options.keep or options.reuse):
            bench_tenant_delete(tenant=tenant)
    result.update(_header(options, tenant, users, build_seconds, fake, perf_counter() - started))
    result.update(shape)
    result["machine"]["load_average"] = {"before": load_before, "after": _load_average()}
    return result


def _load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: on a shared machine, what the absolute figures were measured under."""
    return [round(value, 2) for value in os.getloadavg()]


def _tenant(options: BenchOptions) -> Tenant:
    """A new benchmark tenant, or with `reuse` the kept one named `tenant_slug` (ValueError when there is none)."""
    slug = options.tenant_slug or f"bench-{timezone.now():%Y%m%d-%H%M%S}"
    if not options.reuse:
        return tenant_create(slug=slug, name=f"Benchmark {slug}")
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise ValueError(_NOTHING_KEPT.format(slug=slug))
    return tenant


_NOTHING_KEPT = "No kept benchmark users in tenant {slug!r}: build them first with --keep --tenant {slug}."


def _kept(tenant: Tenant) -> list[BenchUser]:
    """The kept users of a reused tenant, counted once (ValueError when it holds none)."""
    users = kept_users(tenant)
    if not users:
        raise ValueError(_NOTHING_KEPT.format(slug=tenant.slug))
    return users


def _build(tenant: Tenant, assistant, options: BenchOptions, source) -> tuple[list[BenchUser], float]:
    from memory.embeddings import get_embedder

    started = perf_counter()
    vectors = Vectors(source or get_embedder())
    with tqdm(total=options.users, desc="build users", unit="user", disable=_disabled(options)) as bar:
        users = full_users_build(
            tenant=tenant,
            assistant=assistant,
            count=options.users,
            vectors=vectors,
            seed=options.seed,
            now=timezone.now(),
            interleave=options.interleave,
            long_share=options.long_turns,
            on_user=lambda _: bar.update(1),
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would give a long-lived database
    return users, perf_counter() - started


def _disabled(options: BenchOptions) -> bool | None:
    return None if options.progress is None else not options.progress


def _measure(tenant: Tenant, users: list[BenchUser], options: BenchOptions, llm: BenchLLM, clock: TaskClock) -> dict:
    rng = random.Random(options.seed)
    generator = TextGenerator(options.seed + 10_000)
    spaces = MemorySpace.objects.select_related("end_user", "assistant").in_bulk([u.space_id for u in users])
    site_loaded()  # frozen, as the web server freezes what it loaded (memoryos_site.collector); thawed by memory_bench
    result: dict = {"os_cache": []}
    _os_cache_warmed(result, options, "retrieval")
    timed = _retrieval_and_prompt(spaces, options, rng, generator, clock)
    _os_cache_checked(result, options)
    result["retrieval_ms"] = percentiles(timed["first"], P3) | _retrieval_notes(timed["first"], FIRST_TOUCH_NOTE)
    result["retrieval_cached_ms"] = percentiles(timed["again"], P3) | _retrieval_notes(timed["again"], CACHED_NOTE)
    result["exact_top10_ms"] = percentiles(timed["exact"], P3) | {"samples": len(timed["exact"]), "note": EXACT_NOTE}
    result["exact_top10_cached_ms"] = percentiles(timed["exact_again"], P3) | {"note": EXACT_CACHED_NOTE}
    result["visits_task_ms"] = percentiles(clock.own.get(VISITS_TASK, []), P3) | {"note": VISITS_NOTE}
    result["prompt_assembly_ms"] = percentiles(timed["prompt"], P3) | {"note": PROMPT_NOTE}
    result.update(_turns_at_full_mtm(spaces, options, rng, generator, clock, llm))
    result["ingest"] = _ingest(tenant, options, generator, clock, llm)
    result["llm_calls_per_stored_turn"] = result["ingest"]["llm_calls_per_stored_turn"]
    result["ingest_cost_last_over_first"] = result["ingest"]["cost_last_over_first"]
    _os_cache_warmed(result, options, "user pages")
    pages = user_pages_render(tenant=tenant, spaces=spaces, samples=options.samples, rng=rng)
    _os_cache_checked(result, options)
    for name, timings in pages.items():
        result[f"{name}_ms"] = percentiles(timings, P3) | {"samples": len(timings), "note": USER_PAGE_NOTE}
    _os_cache_warmed(result, options, "proxy")
    result["proxy"] = proxy_overhead(tenant=tenant, spaces=spaces, samples=options.samples, rng=rng, clock=clock)
    _os_cache_checked(result, options)
    result["ratios"] = _ratios(result)
    return result


def _os_cache_warmed(result: dict, options: BenchOptions, phase: str) -> None:
    """Before a phase that reads users' rows from the OS cache, read the database's files through it (a warm run
    only: `--cold` reads from disk on purpose); the report keeps what each read found (evaluation.bench.os_cache)."""
    if not options.cold:
        result["os_cache"].append(database_files_read(phase=phase, seed=options.seed))


def _os_cache_checked(result: dict, options: BenchOptions) -> None:
    """At the end of the phase `_os_cache_warmed` prepared, how long a random read of the page table takes now."""
    if not options.cold and "skipped" not in result["os_cache"][-1]:
        result["os_cache"][-1]["read_us_at_end"] = page_table_read_us(seed=options.seed)


def _ratios(result: dict) -> dict:
    """Each latency over its baseline from the same run (p95 over p95), and the proxy's added milliseconds."""
    return {
        "retrieval_warm": ratio(result["retrieval_cached_ms"], result["exact_top10_cached_ms"]),
        "retrieval_cold": ratio(result["retrieval_ms"], result["exact_top10_ms"]),
        "end_user_page": ratio(result["end_user_page_ms"], result["end_user_plain_page_ms"]),
        "proxy_overhead_ms_p95": result["proxy"]["overhead_ms"]["p95"],
        "proxy_first_token_overhead_ms_p95": result["proxy"]["first_token_overhead_ms"]["p95"],
        "proxy_overhead_over_direct_p50": ratio(result["proxy"]["overhead_ms"], result["proxy"]["direct_ms"], "p50"),
        "note": RATIOS_NOTE,
    }


def _retrieval_notes(timings: list[float], note: str) -> dict:
    return {"samples": len(timings), "record_visits": True, "note": note}


def _retrieval_and_prompt(
    spaces: dict, options: BenchOptions, rng: random.Random, generator: TextGenerator, clock: TaskClock
) -> dict[str, list[float]]:
    """Retrieval as a request sees it (the visits it queues are counted by the worker, timed apart) for `samples`
    questions to random users of one half, and the exact top-10 baseline for as many to the other half, alternated
    (each timed on rows it was the first to read); then the first half's questions again, to both (rows cached);
    and prompt assembly. The users are drawn as `questions_drawn` draws them."""
    retrieval_half, baseline_half = spaces_halved(spaces)
    asked = questions_drawn(retrieval_half, options.samples, rng, generator)
    asked_baseline = questions_drawn(baseline_half, options.samples, rng, generator)
    if options.cold:
        caches_emptied()
    timings: dict[str, list[float]] = {name: [] for name in ("first", "prompt", "exact", "again", "exact_again")}
    speakers = Speakers(user="User", assistant="Assistant")
    first_pass = alternated(asked, asked_baseline, rng)
    for which, (space, query) in tqdm(first_pass, desc="retrieval", disable=_disabled(options)):
        if which:
            timings["exact"].append(exact_top10_ms(space, query))
            continue
        result, elapsed = _retrieval_timed(space, query, clock)
        timings["first"].append(elapsed)
        started = perf_counter()
        memory_text(_prompt_context(result), speakers)
        timings["prompt"].append((perf_counter() - started) * 1000)
    for which, (space, query) in alternated(asked, asked, rng):
        if which:
            timings["exact_again"].append(exact_top10_ms(space, query))
        else:
            timings["again"].append(_retrieval_timed(space, query, clock)[1])
    return timings


def questions_drawn(
    spaces: dict[int, MemorySpace], samples: int, rng: random.Random, generator: TextGenerator
) -> list[tuple[MemorySpace, str]]:
    """`samples` questions, each to a random user: drawn by space id, so a seed draws the same users and questions
    on every run, whatever order the database returned the spaces in."""
    ids = sorted(spaces)
    return [(spaces[rng.choice(ids)], generator.question(generator.topic())) for _ in range(samples)]


def _retrieval_timed(space: MemorySpace, query: str, clock: TaskClock) -> tuple[RetrievalResult, float]:
    """One retrieval and its ms, less the tasks it ran in this process (the worker's, not the request's)."""
    clock.take_top_level_ms()
    started = perf_counter()
    result = retrieve(space=space, query=query)
    return result, (perf_counter() - started) * 1000 - clock.take_top_level_ms()


def _prompt_context(result: RetrievalResult) -> MemoryContext:
    knowledge = [k.entry.text for k in [*result.user_knowledge, *result.assistant_knowledge]]
    return MemoryContext(
        pages=[p.page for p in result.pages],
        short_term=result.short_term,
        profile=result.profile.text if result.profile else "",
        knowledge=knowledge,
    )


def _turn(space: MemorySpace, user_message: str, reply: str, clock: TaskClock) -> tuple[float, float]:
    """Record one turn with its updating run in-process: (request-side ms, total ms including the tasks)."""
    started = perf_counter()
    turn_record(end_user=space.end_user, assistant=space.assistant, user_message=user_message, assistant_reply=reply)
    total = (perf_counter() - started) * 1000
    return total - clock.take_top_level_ms(), total


def _turns_at_full_mtm(spaces: dict, options, rng: random.Random, generator, clock: TaskClock, llm: BenchLLM) -> dict:
    """Turns recorded for random full users: each evicts a page from STM into a full MTM."""
    clock.own.clear()
    records = []
    for _ in tqdm(range(options.samples), desc="turns at full MTM", disable=_disabled(options)):
        space = spaces[rng.choice(list(spaces))]
        records.append(_turn(space, *generator.turn(generator.topic()), clock)[0])
    return {
        "record_turn_ms": percentiles(records, P3) | {"samples": len(records)},
        "stm_overflow_task_ms": percentiles(clock.own.get(OVERFLOW_TASK, []), P3)
        | {"samples": len(clock.own.get(OVERFLOW_TASK, []))},
        "promotion_ms": percentiles(clock.own.get(PROMOTE_TASK, []), P3)
        | {"samples": len(clock.own.get(PROMOTE_TASK, []))},
    }


def _ingest(tenant: Tenant, options: BenchOptions, generator: TextGenerator, clock: TaskClock, llm: BenchLLM) -> dict:
    """`turns` turns for one new user, topic runs of 5–30 turns: throughput and how per-turn cost grows."""
    external_id = f"bench-ingest-{timezone.now():%Y%m%d-%H%M%S-%f}"  # a new user each run, also on a reused tenant
    end_user = end_user_create(tenant=tenant, external_id=external_id, display_name="Ingest")
    assistant = tenant.assistants.get(external_id="ava")
    space = space_get_or_create(end_user=end_user, assistant=assistant)
    space = MemorySpace.objects.select_related("end_user", "assistant").get(pk=space.pk)
    clock.own.clear()
    calls_before, steps_before = llm.calls, dict(llm.calls_by_step)
    costs, topic, left = [], generator.topic(), 0
    started = perf_counter()
    for _ in tqdm(range(options.turns), desc="ingest one user", disable=_disabled(options)):
        if left == 0:
            topic, left = generator.topic(), generator.random.randint(5, 30)
        left -= 1
        costs.append(_turn(space, *generator.turn(topic), clock)[1])
    seconds = perf_counter() - started
    space_pending_place(space_id=space.id)  # the last pages, short of a placement batch: their calls count too
    window = min(100, len(costs) // 2) or 1
    first, last = float(np.mean(costs[:window])), float(np.mean(costs[-window:]))
    stored = Page.objects.filter(space=space).count()
    return {
        "turns": options.turns,
        "seconds": round(seconds, 2),
        "turns_per_second": round(options.turns / seconds, 1),
        "cost_ms": percentiles(costs, P3),
        "window": window,
        "first_window_mean_ms": round(first, 2),
        "last_window_mean_ms": round(last, 2),
        "cost_last_over_first": round(last / first, 3),
        "llm_calls": llm.calls - calls_before,
        "llm_calls_by_step": {step: n - steps_before.get(step, 0) for step, n in llm.calls_by_step.items()},
        "llm_calls_per_stored_turn": round((llm.calls - calls_before) / options.turns, 3),
        "pages_stored": stored,
        "segments": Segment.objects.filter(space=space).count(),
        "promotions": len(clock.own.get(PROMOTE_TASK, [])),
        "stm_overflow_task_ms": percentiles(clock.own.get(OVERFLOW_TASK, []), P3),
        "promotion_ms": percentiles(clock.own.get(PROMOTE_TASK, []), P3),
    }


SHAPE_SAMPLE = 50  # users whose memory is counted for the report's shape

SHAPE_SQL = """
SELECT count(*), coalesce(sum(pages), 0)::bigint, coalesce(min(pages), 0), coalesce(max(pages), 0),
       (SELECT count(*) FROM memory_pagepassage WHERE space_id = ANY(%(spaces)s))
FROM (
    SELECT segment.id, count(page.id) AS pages
    FROM memory_segment segment LEFT JOIN memory_page page ON page.segment_id = segment.id
    WHERE segment.space_id = ANY(%(spaces)s)
    GROUP BY segment.id
) per_segment
"""


def memory_shape(users: list[BenchUser]) -> dict:
    """What the measured memory looks like, counted in the database over the first SHAPE_SAMPLE users (not what the
    build meant to write): segments per user, pages per segment (mean, fewest, most) and passages per user. A fake
    that put every page in one segment would show here before its cost is quoted."""
    sample = [u.space_id for u in users[:SHAPE_SAMPLE]]
    if not sample:
        return {"segments_per_user": 0, "pages_per_segment": {}, "passages_per_user": 0.0}
    with connection.cursor() as cursor:
        cursor.execute(SHAPE_SQL, {"spaces": sample})
        segments, placed, fewest, most, passages = cursor.fetchone()
    return {
        "segments_per_user": round(segments / len(sample), 1),
        "pages_per_segment": {
            "mean": round(placed / segments, 1) if segments else 0.0,
            "min": fewest,
            "max": most,
            "users_counted": len(sample),
        },
        "passages_per_user": round(passages / len(sample), 1),
    }


def _shared_buffers() -> str:
    """PostgreSQL's own cache: at 1,000 interleaved users retrieval p95 was 102 ms at 128 MB, 36.5 ms at 6 GB."""
    return _postgresql_setting("shared_buffers")


def _huge_pages() -> str:
    """Whether that cache is in huge pages: a server process's first read of a cached 8 KB page otherwise costs it
    page faults (about 8 µs a page measured here), which is most of a retrieval's time on rows read once."""
    return _postgresql_setting("huge_pages_status")


def _postgresql_setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s, true)", [name])
        return cursor.fetchone()[0] or "unknown"


def _header(options, tenant: Tenant, users: list[BenchUser], build_seconds: float, fake, seconds: float) -> dict:
    pages = sum(u.pages for u in users)
    return {
        "users": len(users),
        "pages_per_user": round(pages / len(users), 1) if users else 0,
        "knowledge_per_user": 2 * settings.MEMORY_KNOWLEDGE_CAPACITY,
        "interleave": None if options.reuse else options.interleave,
        "long_turn_share": None if options.reuse else options.long_turns,
        "cold": options.cold,  # the first pass read memory from disk: database restarted, OS cache dropped
        "build_seconds": round(build_seconds, 1),
        "build_users_per_minute": round(60 * len(users) / build_seconds, 1) if build_seconds else None,
        "embeddings": "random-unit with topic structure (--fake-embeddings)" if options.fake_embeddings else fake.name,
        "measured_with": "BenchEmbedder and BenchLLM at the seams; Celery eager; LLM mode (LLM_BASE_URL set)",
        "tenant": tenant.slug,
        "kept": options.keep or options.reuse,
        "reused": options.reuse,
        "samples": options.samples,
        "machine": {
            "cpus": os.cpu_count(),
            "postgresql_shared_buffers": _shared_buffers(),
            "postgresql_huge_pages": _huge_pages(),
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
        },
        "generated_at": timezone.now().isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "topics": len(TOPICS),
    }
