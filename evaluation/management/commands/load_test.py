"""python manage.py load_test: gunicorn, a Celery worker on Redis and a fake LLM under locust, then checks."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.loadtest import load_run, redis_reachable, report_table


class Command(BaseCommand):
    help = (
        "Start gunicorn (4 workers), a Celery worker and beat on Redis, and a fake OpenAI-compatible LLM against "
        "this database; drive them with locust (chat sessions, turns, retrieval, list reads, one export and one "
        "erasure a minute) in a fresh tenant (load-<hex>, kept afterwards); then check that every acknowledged turn "
        "is stored exactly once and nothing answered 5xx. Prints p50/p95/p99 per endpoint and writes OUT/report.json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--users", type=int, default=50, help="concurrent chat sessions (default 50)")
        parser.add_argument("--duration", type=int, default=300, help="seconds of load (default 300)")
        parser.add_argument(
            "--broker", default="redis://127.0.0.1:6379/12", help="the Celery broker, a Redis URL (default db 12)"
        )
        parser.add_argument("--out", type=Path, default=Path("var/load-test"), help="logs, locust CSV, report.json")

    def handle(self, *args, users: int, duration: int, broker: str, out: Path, **options) -> None:
        if not redis_reachable(broker):
            raise CommandError(f"no Redis answers at {broker}: start one (redis-server) or pass --broker")
        report = load_run(users=users, duration=duration, broker_url=broker, out=out)
        self.stdout.write(report_table(report))
        self.stdout.write(
            f"requests {report.requests}, statuses {report.status_counts}, acknowledged turns "
            f"{report.acknowledged_turns}, erasures {report.erased_users}, exports {report.exports} "
            f"({report.exports_done} done, {report.exports_pending} still queued), Celery queue backlog "
            f"{report.queue_backlog}, load average {report.load_average}; report: {out / 'report.json'}"
        )
        if report.problems:
            raise CommandError("the checks failed:\n" + "\n".join(report.problems[:50]))
        self.stdout.write(self.style.SUCCESS("every acknowledged turn is stored exactly once; no 5xx"))
