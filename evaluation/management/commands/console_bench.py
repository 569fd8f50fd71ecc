"""python manage.py console_bench: the fully-loaded time of the console's case view for a full user, in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from evaluation.bench.console_browser import GOAL_MS, ConsoleBenchOptions, console_bench


class Command(BaseCommand):
    help = (
        "Build one full user (200 segments) in a fresh tenant, serve it with gunicorn and the collected static "
        "files, and time each tab of its console page in Chromium (/usr/bin/chromium), cold and warm; then delete "
        "the tenant unless --keep."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loads", type=int, default=20, help="loads per tab and cache state (default 20)")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--keep", action="store_true", help="keep the benchmark tenant and its data afterwards")
        parser.add_argument(
            "--out", type=Path, default=Path("var/console-bench"), help="gunicorn's log, static files, result"
        )

    def handle(self, *args, **options) -> None:
        out: Path = options["out"]
        out.mkdir(parents=True, exist_ok=True)
        run = ConsoleBenchOptions(
            loads=options["loads"], workers=options["workers"], seed=options["seed"], keep=options["keep"], out=out
        )
        result = console_bench(run)
        (out / "console-bench.json").write_text(json.dumps(result, indent=1))
        self.stdout.write(f"{'tab':18}{'cache':7}{'p50 ms':>9}{'p95 ms':>9}{'server p50':>12}{'KB':>9}")
        for tab, figures in result["tabs"].items():
            for cache in ("cold", "warm"):
                f = figures[cache]
                loaded, server = f["loaded_ms"], f["server_ms"]
                self.stdout.write(
                    f"{tab:18}{cache:7}{loaded['p50']:>9.0f}{loaded['p95']:>9.0f}{server['p50']:>12.0f}"
                    f"{f['transferred_kb']:>9.0f}"
                )
        verdict = "met" if result["goal_met"] else "NOT met"
        self.stdout.write(f"Goal: the user page (short-term tab), p95 ≤ {GOAL_MS} ms fully loaded, cold: {verdict}.")
        self.stdout.write(self.style.SUCCESS(f"Wrote {out / 'console-bench.json'}."))
