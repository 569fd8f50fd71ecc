"""python manage.py first_pass_recall: how much of the exact top k the vector channel's first pass keeps, by code and
pool size, over the pooled pages of the retrieval sets (evaluation/first_pass_recall.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation import devsets, locomo
from evaluation.first_pass_recall import ONE_BIT, PooledSets, best_factor_left_out, kept_share
from evaluation.management.commands.devsets_generate import LOCOMO_DEV
from memory.embeddings import embed_texts
from memory.models import Page
from memory.text import passage_spans

KS = (10, 20, 100)


def _factor(text: str) -> float | None:
    if text == "one-bit":
        return ONE_BIT
    try:
        factor = float(text)
    except ValueError:
        factor = 0.0
    if not 0 < factor < 10:
        raise CommandError(f"--factors: {text!r} is neither one-bit nor a threshold factor between 0 and 10")
    return factor


def _pool(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise CommandError(f"--pools: {text!r} is not a positive whole number")
    return int(text)


class Command(BaseCommand):
    help = (
        "Measure the share of the exact cosine top 10/20/100 that the vector channel's first pass (Hamming distance "
        "over one- or two-bit codes, then the best POOL by exact cosine) keeps, over the pages (or with --passages the "
        "passages of the long pages) of LoCoMo dev and the generated sets pooled into one space, with the configured "
        "embedder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--locomo", type=Path, default=LOCOMO_DEV, help="LoCoMo file (its sets are left out if absent)"
        )
        parser.add_argument("--seed", type=int, default=1, help="seed of the generated sets and of the questions drawn")
        parser.add_argument("--per-set", type=int, default=200, help="questions drawn from each set (default 200)")
        parser.add_argument(
            "--factors", default="one-bit,0.2,0.3,0.385,0.5,0.6", help="comma-separated: one-bit, or c in t = c/√d"
        )
        parser.add_argument("--pools", default="200,250,300,400", help="comma-separated first-pass sizes")
        parser.add_argument(
            "--passages",
            action="store_true",
            help="pool the passages of the long pages (memory.text.passage_spans) instead of the pages, as the "
            "channel's passage pass ranks them",
        )

    def handle(self, *args, **options) -> None:
        factors = [_factor(text.strip()) for text in options["factors"].split(",")]
        pools = [_pool(text.strip()) for text in options["pools"].split(",")]
        pooled = self._pooled(options["locomo"], options["seed"], options["passages"])
        drawn = pooled.drawn(per_set=options["per_set"], seed=options["seed"])
        kind = "passages" if options["passages"] else "pages"
        self.stdout.write(
            f"{len(pooled.pages)} {kind} pooled; questions: {', '.join(f'{n} {len(q)}' for n, q in drawn.items())}"
        )
        results = {}
        for factor in factors:
            for pool in pools:
                for name, questions in drawn.items():
                    results[(factor, pool, name)] = kept_share(pooled, questions, factor=factor, pool=pool, ks=KS)
                self.stdout.write(self._row(factor, pool, {name: results[(factor, pool, name)] for name in drawn}))
        self._left_out(results, factors, pools, list(drawn))

    def _pooled(self, path: Path, seed: int, passages: bool = False) -> PooledSets:
        sets = {}
        if path.exists():
            sets["locomo_dev"] = locomo.load(path)
            sets["locomo_filler"] = devsets.locomo_filler(sets["locomo_dev"], seed=seed)
        else:
            self.stderr.write(f"no LoCoMo file at {path}: only the generated sets")
        sets["assistant_facts"] = devsets.assistant_facts(seed=seed)
        sets["technical_long"] = devsets.technical_long(seed=seed)
        pages, questions, question_set = [], [], []
        for name, samples in sets.items():
            for sample in samples:
                for turn in locomo.conversation_turns(sample["conversation"]):  # the text memory embeds, as a page's
                    text = Page(user_message=turn.user_message, assistant_reply=turn.assistant_reply).memory_text
                    pages += [text[start:end] for start, end in passage_spans(text)] if passages else [text]
                questions += [str(qa["question"]) for qa in sample["qa"]]
                question_set += [name] * len(sample["qa"])
        if not pages or not questions:
            raise CommandError(f"no {'passages' if passages else 'pages'} or no questions to measure")
        return PooledSets(pages=embed_texts(pages), questions=embed_texts(questions), question_set=question_set)

    @staticmethod
    def _row(factor, pool: int, by_set: dict[str, dict[int, float]]) -> str:
        mean = {k: np.mean([shares[k] for shares in by_set.values()]) for k in KS}
        sets = "; ".join(f"{name} {shares[10]:.4f}/{shares[20]:.4f}" for name, shares in by_set.items())
        label = "one bit" if factor is ONE_BIT else f"two bits c={factor}"
        return f"{label:>16} pool {pool:>4}: mean {' / '.join(f'{mean[k]:.4f}' for k in KS)} | {sets}"

    def _left_out(self, results, factors, pools, names: list[str]) -> None:
        two_bit = [factor for factor in factors if factor is not ONE_BIT]
        if len(two_bit) < 2 or len(names) < 2:
            return
        for pool in pools:
            for held in names:
                chosen = best_factor_left_out(results, factors=two_bit, pool=pool, held=held)
                kept = results[(chosen, pool, held)]
                self.stdout.write(
                    f"pool {pool}, {held} held out: c={chosen} chosen on the others; held out top 10/20 "
                    f"{kept[10]:.4f}/{kept[20]:.4f}"
                )
