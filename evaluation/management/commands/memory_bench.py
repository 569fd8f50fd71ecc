"""python manage.py memory_bench: latency and growth of the memory paths at scale, on synthetic full users."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bench.baselines import caches_emptiable
from evaluation.bench.data import LONG_TURN_SHARE
from evaluation.bench.locomo_ingest import DEFAULT_DATA, LocomoIngestOptions, locomo_ingest_bench
from evaluation.bench.run import BenchOptions, memory_bench


class Command(BaseCommand):
    help = (
        "Generate synthetic users with a full memory in a fresh tenant, measure retrieval, prompt assembly, turn "
        "recording, the updating tasks, ingestion growth and the user pages (fake LLM and embedder), then delete "
        "the tenant unless --keep. With --ingest-locomo, instead replay LoCoMo turns into one user's memory with the "
        "real embedder and a fake OpenAI-compatible server over HTTP, and report the cost per stored turn."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--users", type=int, default=10, help="full users to generate (default 10)")
        parser.add_argument("--turns", type=int, default=1000, help="turns ingested for one new user (default 1000)")
        parser.add_argument("--samples", type=int, default=200, help="measurements per latency figure (default 200)")
        parser.add_argument(
            "--fake-embeddings",
            action="store_true",
            help="random-unit vectors (topic-structured) instead of embedding every generated text with the model",
        )
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--tenant", default="", help="slug of the benchmark tenant (default bench-<timestamp>)")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark tenant and its data afterwards")
        parser.add_argument(
            "--reuse",
            action="store_true",
            help="measure the full users of the kept tenant named by --tenant instead of building new ones",
        )
        parser.add_argument(
            "--interleave",
            type=int,
            default=1,
            help="build users in groups of N whose pages are written interleaved in time, as when users talk at once "
            "(default 1: each user's pages together)",
        )
        parser.add_argument(
            "--long-turns",
            type=float,
            default=LONG_TURN_SHARE,
            help="share of each built user's mid-term turns whose reply is long enough for passages of its own "
            f"(default {LONG_TURN_SHARE}; 0 builds none)",
        )
        parser.add_argument(
            "--cold",
            action="store_true",
            help="before the questions are first asked, restart the embedded PostgreSQL and drop the OS page cache (as "
            "root), so memory is read from disk as after a restart",
        )
        parser.add_argument("--out", type=Path, default=Path("bench.json"))
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")
        parser.add_argument(
            "--ingest-locomo",
            action="store_true",
            help="replay --turns LoCoMo turns (the real embedder, evaluation.fake_llm over HTTP) instead",
        )
        parser.add_argument("--locomo-data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON for --ingest-locomo")
        parser.add_argument(
            "--llm",
            choices=("http", "bench", "offline"),
            default="http",
            help="--ingest-locomo's model: the fake HTTP server (default), BenchLLM in-process, or offline steps",
        )

    def handle(self, *args, **options) -> None:
        if options["ingest_locomo"]:
            self._locomo(options)
            return
        run = BenchOptions(
            users=options["users"],
            turns=options["turns"],
            samples=options["samples"],
            fake_embeddings=options["fake_embeddings"],
            seed=options["seed"],
            tenant_slug=options["tenant"],
            keep=options["keep"],
            progress=False if options["no_progress"] else None,
            reuse=options["reuse"],
            interleave=options["interleave"],
            cold=options["cold"],
            long_turns=options["long_turns"],
        )
        if run.interleave < 1:
            raise CommandError("--interleave must be at least 1.")
        if not 0 <= run.long_turns <= 1:
            raise CommandError("--long-turns is a share: between 0 and 1.")
        if run.reuse and not run.tenant_slug:
            raise CommandError("--reuse measures a kept tenant: name it with --tenant.")
        try:
            if run.cold:
                caches_emptiable()
            result = memory_bench(run)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        options["out"].parent.mkdir(parents=True, exist_ok=True)
        options["out"].write_text(json.dumps(result, indent=1))
        self._summary(result)
        self.stdout.write(self.style.SUCCESS(f"Wrote {options['out']}."))

    def _locomo(self, options: dict) -> None:
        run = LocomoIngestOptions(
            turns=options["turns"],
            data=options["locomo_data"],
            tenant_slug=options["tenant"],
            keep=options["keep"],
            progress=False if options["no_progress"] else None,
            llm=options["llm"],
        )
        try:
            result = locomo_ingest_bench(run)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        options["out"].parent.mkdir(parents=True, exist_ok=True)
        options["out"].write_text(json.dumps(result, indent=1))
        self.stdout.write(
            f"{result['turns']} LoCoMo turns at {result['turns_per_second']} turns/s ({result['embedder']}); "
            f"{result['pages_stored']} pages in {result['segments']} segments; LLM calls per stored turn "
            f"{result['llm_calls_per_stored_turn']} (target ≤ 1.0); segment quality {result['segment_quality']}"
        )
        for kind, key in (("wall", "growth"), ("CPU", "cpu_growth")):
            for window in result[key]:
                self.stdout.write(
                    f"{kind} ms per stored turn, turns {window['first_window']}: {window['first_window_mean_ms']}; "
                    f"turns {window['last_window']}: {window['last_window_mean_ms']}; "
                    f"last/first {window['last_over_first']}"
                )
        self.stdout.write(self.style.SUCCESS(f"Wrote {options['out']}."))

    def _summary(self, result: dict) -> None:
        ingest = result["ingest"]
        built = (
            f"kept in tenant {result['tenant']}, reused"
            if result["reused"]
            else f"built in {result['build_seconds']} s ({result['build_users_per_minute']} users/min)"
        )
        self.stdout.write(
            f"{result['users']} full users ({result['pages_per_user']} pages each) {built}; total {result['seconds']} s"
        )
        per_segment = result["pages_per_segment"]
        self.stdout.write(
            f"shape (counted over {per_segment.get('users_counted', 0)} users): {result['segments_per_user']} segments "
            f"a user, {per_segment.get('mean')} pages a segment ({per_segment.get('min')}-{per_segment.get('max')}), "
            f"{result['passages_per_user']} passages a user"
        )
        self.stdout.write(f"{'figure':34}{'p50':>10}{'p95':>10}{'p99':>10}  target")
        rows = [
            ("retrieval, first asked (ms)", result["retrieval_ms"], ""),
            ("retrieval, asked again (ms)", result["retrieval_cached_ms"], "p95 ≤ 15 ms at 1,000 users, rows cached"),
            ("prompt assembly (ms, stand-in)", result["prompt_assembly_ms"], ""),
            ("record a turn (ms)", result["record_turn_ms"], ""),
            ("visits counted (worker, ms)", result["visits_task_ms"], ""),
            ("STM overflow task (ms)", result["stm_overflow_task_ms"], ""),
            ("promotion (ms)", result["promotion_ms"], ""),
            ("ingest cost per turn (ms)", ingest["cost_ms"], ""),
            ("console user page (ms)", result["console_user_page_ms"], "p95 ≤ 100 ms"),
            ("end user's memory page (ms)", result["end_user_page_ms"], "p95 ≤ 100 ms"),
            ("  baseline: plain page (ms)", result["end_user_plain_page_ms"], "same layout"),
            ("  baseline: exact top-10 (ms)", result["exact_top10_ms"], "first asked"),
            ("  baseline: exact top-10 (ms)", result["exact_top10_cached_ms"], "asked again"),
            ("proxy overhead (ms)", result["proxy"]["overhead_ms"], "p95 ≤ 30 ms"),
            ("proxy first-token overhead (ms)", result["proxy"]["first_token_overhead_ms"], "p95 ≤ 30 ms"),
        ]
        for label, figures, target in rows:
            cells = "".join(_cell(figures.get(p)) for p in ("p50", "p95", "p99"))
            self.stdout.write(f"{label:34}{cells}  {target}")
        ratios = result["ratios"]
        self.stdout.write(
            f"ratios (p95 over the same run's baseline): retrieval warm {ratios['retrieval_warm']}, cold "
            f"{ratios['retrieval_cold']} (targets ≤ 2); end user's page {ratios['end_user_page']}; proxy overhead "
            f"{ratios['proxy_overhead_over_direct_p50']} × the direct call (p50); load average "
            f"{result['machine']['load_average']['before']} → {result['machine']['load_average']['after']}"
        )
        for read in result.get("os_cache", []):
            self.stdout.write(_os_cache_line(read))
        self.stdout.write(
            f"ingest: {ingest['turns']} turns at {ingest['turns_per_second']} turns/s; last/first {ingest['window']} "
            f"turns cost ratio {result['ingest_cost_last_over_first']} (target ≈ 1); LLM calls per stored turn "
            f"{result['llm_calls_per_stored_turn']} (target ≤ 1.0)"
        )


def _os_cache_line(read: dict) -> str:
    if "skipped" in read:
        return f"OS cache before {read['phase']}: not read ({read['skipped']})"
    return (
        f"OS cache before {read['phase']}: a random 8 KB read took {read['read_us_before']} µs, "
        f"{read['read_us_after']} µs once the database's {read['gb_read']} GB were read through ({read['seconds']} s), "
        f"{read.get('read_us_at_end')} µs at the phase's end"
    )


def _cell(value: float | None) -> str:
    return f"{'–':>10}" if value is None else f"{value:>10.2f}"
