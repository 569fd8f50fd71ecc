"""Precision and recall of the personal-data detector on the labelled corpus (a Markdown table for docs/results.md)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from evaluation.personal_data_eval import CORPUS, corpus_report


class Command(BaseCommand):
    help = "Score the personal-data detector on a labelled corpus: precision and recall per category."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--corpus", type=Path, default=CORPUS, help="a corpus in the format of the default")

    def handle(self, *args, corpus: Path, **options) -> None:
        if not corpus.exists():
            self.stderr.write(f"No corpus at {corpus}")
            raise SystemExit(2)
        self.stdout.write(corpus_report(corpus))
