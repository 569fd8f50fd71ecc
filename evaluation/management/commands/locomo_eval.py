"""python manage.py locomo_eval: evidence recall (and with --answer, F1 and BLEU-1) on LoCoMo-format data.

Several `--data` files are evaluated one after another, each into its own tenant, and one table puts every set's
recall@5 / @10 per category side by side (`evaluation.sets_table`).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluation.locomo_eval import (
    CURVE_MAX_K,
    DEFAULT_SYSTEMS,
    LLM_MODES,
    SYSTEMS,
    EvalOptions,
    EvaluationError,
    locomo_evaluate,
)
from evaluation.report import report_html
from evaluation.scoring import CATEGORY_NAMES
from evaluation.sets_table import sets_table

DEFAULT_DATA = Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo" / "locomo_dev.json"


def _csv(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


class Command(BaseCommand):
    help = (
        "Replay LoCoMo conversations through the memory pipeline into a fresh tenant and score each system's "
        "retrieval (evidence recall@k) and, with --answer, its answers."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--data",
            type=Path,
            action="append",
            help=f"LoCoMo-format JSON; repeat it for several sets, each in its own tenant (default {DEFAULT_DATA})",
        )
        parser.add_argument("--conversations", type=_csv, default=None, help="sample ids, e.g. conv-26,conv-30")
        parser.add_argument(
            "--systems",
            type=_csv,
            default=list(DEFAULT_SYSTEMS),
            help=f"from {','.join(SYSTEMS)} and memoryos:<stage>=<value>:… (default {','.join(DEFAULT_SYSTEMS)})",
        )
        parser.add_argument("--k", type=int, default=10, help=f"k of recall@k and of answer context (1–{CURVE_MAX_K})")
        parser.add_argument("--llm", choices=LLM_MODES, default="offline", help="offline: no model at all")
        parser.add_argument("--answer", action="store_true", help="also answer every question and score answers")
        parser.add_argument("--out", type=Path, default=Path("results.json"), help="several sets: <stem>-<set>.json")
        parser.add_argument("--report", type=Path, default=Path("report.html"), help="with several sets: per set too")
        parser.add_argument(
            "--tenant", default="", help="the fresh tenant's slug (default locomo-<timestamp>; several: <slug>-<set>)"
        )
        parser.add_argument(
            "--reuse", action="store_true", help="score again on the tenant --tenant that an earlier run ingested"
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **options) -> None:
        self._migrate()
        files = options["data"] or [DEFAULT_DATA]
        several = len(files) > 1
        tenant = options["tenant"] or (f"locomo-{_now_slug()}" if several else "")
        outcomes = {}
        for data in files:
            name = data.stem
            run = EvalOptions(
                data=data,
                conversations=options["conversations"],
                systems=tuple(options["systems"]),
                k=options["k"],
                llm=options["llm"],
                answer=options["answer"],
                tenant_slug=f"{tenant}-{name.replace('_', '-')}" if several else tenant,
                reuse=options["reuse"],
                progress=False if options["no_progress"] else None,
            )
            try:
                results = locomo_evaluate(run)
            except EvaluationError as exc:
                raise CommandError(f"{data}: {exc}" if several else str(exc)) from exc
            out, report = (
                (_per_set(options["out"], name), _per_set(options["report"], name))
                if several
                else (
                    options["out"],
                    options["report"],
                )
            )
            for path in (out, report):
                path.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(results, indent=1))
            report.write_text(report_html(results))
            self._summary(results)
            self.stdout.write(self.style.SUCCESS(f"Wrote {out} and {report}."))
            outcomes[name] = results
        if several:
            self.stdout.write(sets_table(outcomes))

    def _migrate(self) -> None:
        """A fresh clone's database has no tables yet: apply the migrations first, and say so."""
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            self.stdout.write("The database is not migrated yet: applying the migrations first.")
            call_command("migrate", verbosity=0, interactive=False)

    def _summary(self, results: dict) -> None:
        self.stdout.write(
            f"{results['turns']} turns → {results['pages']} pages ({results['pages_with_dia_ids']} dia_ids), "
            f"{results['segments']} segments, tenant {results['tenant']}; {results['questions']} questions; "
            f"{results['seconds']} s ({results['ingest_seconds']} s ingesting)"
        )
        keys = ["1", "2", "3", "4", "overall", "5"]
        names = [("overall 1–4" if key == "overall" else CATEGORY_NAMES[int(key)]) for key in keys]
        self.stdout.write(f"{'':14}{'metric':12}" + "".join(f"{name:>13}" for name in names))
        for system, summary in results["systems"].items():
            for metric in ("recall_at_k", "f1", "f1_locomo", "bleu1"):
                if metric not in summary:
                    continue
                label = f"recall@{summary['k']}" if metric == "recall_at_k" else metric
                cells = "".join(_cell(summary[metric].get(key)) for key in keys)
                self.stdout.write(f"{system:14}{label:12}{cells}")


def _cell(value: float | None) -> str:
    return f"{'–':>13}" if value is None else f"{value:>13.3f}"


def _per_set(path: Path, name: str) -> Path:
    return path.with_name(f"{path.stem}-{name}{path.suffix}")


def _now_slug() -> str:
    from django.utils import timezone

    return f"{timezone.now():%Y%m%d-%H%M%S}"
