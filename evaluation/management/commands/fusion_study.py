"""python manage.py fusion_study: cross-validate retrieval's fusion weights across ingested evaluation sets."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation import fusion_study, locomo
from evaluation.scope import settings_changed
from memory.models import Tenant
from memory.services.embedding_state import embedder_for_store


class Command(BaseCommand):
    help = (
        "Read every question's page channels once from tenants that locomo_eval ingested, score every setting of "
        "the fusion weights, and report leave-one-set-out and leave-one-conversation-out folds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--set",
            nargs=3,
            action="append",
            metavar=("NAME", "TENANT", "DATA"),
            required=True,
            help="a set's name, the tenant locomo_eval ingested it into, and its LoCoMo-format file",
        )
        parser.add_argument("--cache", type=Path, default=Path("var/fusion"), help="channel reads kept per tenant")
        parser.add_argument("--out", type=Path, default=Path("var/fusion/folds.json"))

    def handle(self, *args, **options) -> None:
        questions = []
        for name, slug, data in options["set"]:
            questions += self._questions(name, slug, Path(data), options["cache"])
        self.stdout.write(f"{len(questions)} questions; scoring {len(fusion_study.grid())} settings")
        table = fusion_study.Table.build(questions, fusion_study.grid())
        folds = fusion_study.folds(table)
        options["out"].parent.mkdir(parents=True, exist_ok=True)
        options["out"].write_text(json.dumps(folds, indent=1))
        for fold in folds:
            held = ", ".join(f"{k} {v:.3f} (flat {fold['flat_rag'][k]:.3f})" for k, v in fold["held_out"].items())
            self.stdout.write(f"{fold['fold']:34} {held}  chosen {fold['chosen']}")
        everyone = table.flat == table.flat
        for label, config in fusion_study.named(table.configs).items():
            self.stdout.write(f"{label:34} {table.by_set(table.recalls[config], everyone)}")
        index = table.chosen(table.flat == table.flat)
        everything = table.by_set(table.recalls[index], table.flat == table.flat)
        self.stdout.write(f"chosen on every set: {fusion_study._weights(table.configs[index])} -> {everything}")
        self.stdout.write(f"flat_rag: {table.by_set(table.flat, table.flat == table.flat)}")

    def _questions(self, name: str, slug: str, data: Path, cache: Path) -> list:
        path = cache / f"{slug}.pickle"
        if path.exists():
            return pickle.loads(path.read_bytes())
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"no tenant {slug!r}: ingest {data} with locomo_eval --tenant first")
        with settings_changed(MEMORY_RETRIEVE_PAGES=20, LLM_BASE_URL=""):
            found = fusion_study.questions_collect(
                set_name=name, tenant=tenant, samples=locomo.load(data), embedder=embedder_for_store()
            )
        cache.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(found))
        return found
