"""python manage.py currency_eval: how often memory answers with what is true now (evaluation/currency_eval.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from evaluation.currency_eval import currency_evaluate, currency_table


class Command(BaseCommand):
    help = (
        "Replay generated chats whose facts change (devsets_generate's assistant_facts) and report the share of "
        "questions about a changed fact that the offline reply answers with the right value, current or previous, "
        "with and without what validity adds to retrieval."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", type=Path, action="append", required=True, help="a generated set (repeatable)")
        parser.add_argument("--tenant", default="", help="prefix of the fresh tenants (default currency-<time>)")
        parser.add_argument("--promote", action="store_true", help="promote every segment before asking")

    def handle(self, *args, **options) -> None:
        missing = [str(path) for path in options["data"] if not path.exists()]
        if missing:
            raise CommandError(f"no such file: {', '.join(missing)} (python manage.py devsets_generate writes them)")
        slug = options["tenant"] or f"currency-{timezone.now():%Y%m%d-%H%M%S}"
        try:
            records = currency_evaluate(data=options["data"], tenant_slug=slug, promote=options["promote"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(currency_table(records))
