"""python manage.py devsets_generate: write the generated evaluation sets (evaluation/devsets.py) as LoCoMo JSON."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from evaluation import devsets, locomo

LOCOMO_DEV = Path(settings.BASE_DIR).parent / "shared" / "data" / "locomo" / "locomo_dev.json"


class Command(BaseCommand):
    help = (
        "Write the generated evaluation sets (personal-assistant facts that change, technical chats with long "
        "answers, LoCoMo dev with small talk inserted) as LoCoMo-format JSON files, seeded and deterministic."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, default=Path("var/devsets"), help="folder (default var/devsets)")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--locomo", type=Path, default=LOCOMO_DEV, help="LoCoMo file the filler set pads")

    def handle(self, *args, **options) -> None:
        out, seed = options["out"], options["seed"]
        out.mkdir(parents=True, exist_ok=True)
        sets = {
            "assistant_facts": devsets.assistant_facts(seed=seed),
            "technical_long": devsets.technical_long(seed=seed),
        }
        if options["locomo"].exists():
            sets["locomo_filler"] = devsets.locomo_filler(locomo.load(options["locomo"]), seed=seed)
        else:
            self.stderr.write(f"no LoCoMo file at {options['locomo']}: locomo_filler not written")
        for name, samples in sets.items():
            path = out / f"{name}.json"
            path.write_text(json.dumps(samples, indent=1))
            questions = sum(len(s["qa"]) for s in samples)
            self.stdout.write(f"{path}: {len(samples)} conversations, {questions} questions")
