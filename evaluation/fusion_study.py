"""Choosing retrieval's fusion weights by cross-validation across evaluation sets and conversations.

For every question of every ingested set, the page channels are read once (`memory.retrieval.search.channel_candidates`:
each candidate's cosine, share of the query's IDF mass, date match) together with every page's cosine and order;
each setting of the weights is then scored in memory by `fused_score`'s formula (vectorised; the segment prior and
the facts' pages off, as in the product's default) with the neighbour rule of `retrieve()`; a test checks that it
ranks every question as `retrieve()` does. Folds: leave one set out (choose on the others, score the one left out)
and leave one conversation out. A setting is chosen as the best mean recall@10 (categories 1–4) over the sets among
those no more than TOLERANCE below flat_rag on any set (`Table.chosen`).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.utils import timezone

from evaluation import scoring
from evaluation.locomo_eval import EvalOptions, _conversation
from memory.embeddings import Embedder
from memory.models import MemorySpace, Tenant
from memory.retrieval.channels import NEIGHBOUR_HITS
from memory.retrieval.config import DEFAULT, RetrievalConfig
from memory.retrieval.search import channel_candidates

K = 10


@dataclass
class Question:
    """What fusion needs of one question: the candidates' channel scores, every page's cosine and order."""

    set_name: str
    conversation: str
    category: int
    evidence: list[str]
    ids: np.ndarray  # candidate page ids
    cosine: np.ndarray
    words: np.ndarray
    dated: np.ndarray
    seq: np.ndarray
    all_cosine: dict[int, float]  # page id → cosine, every page of the conversation
    by_seq: dict[int, int]  # seq → page id
    dia_ids: dict[int, list[str]]  # page id → its dia_ids
    flat: list[int]  # flat_rag's top K page ids


def questions_collect(*, set_name: str, tenant: Tenant, samples: list[dict], embedder: Embedder) -> list[Question]:
    """Every question of categories 1–4 with evidence, with its channels read from the ingested `tenant`."""
    collected = []
    options = EvalOptions(data=Path(set_name), llm="offline")  # what `_conversation` reads: the offline reader
    now = timezone.now()
    for sample in samples:
        space = MemorySpace.objects.get(tenant=tenant, end_user__external_id=sample["sample_id"])
        conversation = _conversation(sample, space, options, embedder)
        by_seq = {p.seq: p.id for p in conversation.pages}
        dia_ids = {p.id: list((p.source_meta or {}).get("dia_ids", [])) for p in conversation.pages}
        page_ids = np.array([p.id for p in conversation.pages])
        for qa in sample.get("qa", []):
            evidence = scoring.evidence_ids(qa.get("evidence", []))
            if int(qa["category"]) not in scoring.MAIN_CATEGORIES or not evidence:
                continue
            vector = embedder.embed([str(qa["question"])])[0]
            collected.append(_question(set_name, sample, qa, evidence, conversation, vector, now, page_ids))
            collected[-1].by_seq, collected[-1].dia_ids = by_seq, dia_ids
    return collected


def _question(set_name, sample, qa, evidence, conversation, vector, now, page_ids) -> Question:
    all_cosine = conversation.vectors @ vector
    candidates, _ = channel_candidates(space=conversation.space, query=str(qa["question"]), now=now)
    flat = [int(page_ids[i]) for i in np.argsort(-all_cosine, kind="stable")[:K]]
    return Question(
        set_name=set_name,
        conversation=sample["sample_id"],
        category=int(qa["category"]),
        evidence=evidence,
        ids=np.array([c.id for c in candidates]),
        cosine=np.array([c.cosine for c in candidates]),
        words=np.array([c.words for c in candidates]),
        dated=np.array([float(c.dated) for c in candidates]),
        seq=np.array([c.seq for c in candidates]),
        all_cosine=dict(zip(page_ids.tolist(), all_cosine.tolist(), strict=True)),
        by_seq={},
        dia_ids={},
        flat=flat,
    )


def ranking(question: Question, config: RetrievalConfig) -> list[int]:
    """The top K page ids `retrieve()` would return under `config` (the fused score, then the neighbour rule)."""
    lexical = config.words_weight if config.lexical else 0.0
    dated = config.date_weight if config.time else 0.0
    fused = question.cosine + lexical * question.words + dated * question.dated
    order = np.lexsort((question.ids, -question.cosine, -fused))
    scores = dict(zip(question.ids.tolist(), fused.tolist(), strict=True))
    if config.neighbours:
        _neighbours(question, config, [int(question.ids[i]) for i in order[:NEIGHBOUR_HITS]], scores)
    return sorted(scores, key=lambda i: (-scores[i], -question.all_cosine.get(i, 0.0), i))[:K]


def _neighbours(question: Question, config: RetrievalConfig, hits: list[int], scores: dict[int, float]) -> None:
    seq_of = _seq_of(question)
    hit_seqs = {seq_of[h] for h in hits}
    seen: set[int] = set()
    for hit in hits:
        for seq in (seq_of[hit] - 1, seq_of[hit] + 1):
            page = question.by_seq.get(seq)
            if page is None or seq in hit_seqs or seq in seen:
                continue
            seen.add(seq)
            cosine = question.all_cosine[page]
            if cosine < config.neighbour_floor:
                continue
            own = scores.get(page, cosine)
            scores[page] = max(own, min(config.neighbour_share * scores[hit], scores[hit] - 1e-9))


def _seq_of(question: Question) -> dict[int, int]:
    if not hasattr(question, "_seq_of"):
        question._seq_of = {page_id: seq for seq, page_id in question.by_seq.items()}
    return question._seq_of


def recall(question: Question, pages: list[int]) -> float:
    return scoring.recall_at_k(question.evidence, [question.dia_ids[p] for p in pages], K)


GRID = {
    "words_weight": (0.0, 0.3, 0.5, 0.7, 1.0, 1.5),
    "date_weight": (0.0, 0.1, 0.2, 0.3),
    "neighbour_share": (0.7, 0.8, 0.9),
    "neighbour_floor": (0.1, 0.2, 0.3, 2.0),  # 2.0: no neighbour can pass (cosine ≤ 1)
}
TOLERANCE = 0.005  # a setting may fall this far below flat_rag on a set (a question in 200) and still be chosen


def grid(base: RetrievalConfig = DEFAULT) -> list[RetrievalConfig]:
    names = list(GRID)
    return [
        dataclasses.replace(base, **dict(zip(names, values, strict=True)))
        for values in itertools.product(*(GRID[n] for n in names))
    ]


@dataclass
class Table:
    """recall@10 of every setting (rows) on every question (columns), and flat_rag's, computed once."""

    configs: list[RetrievalConfig]
    questions: list[Question]
    recalls: np.ndarray
    flat: np.ndarray

    @classmethod
    def build(cls, questions: list[Question], configs: list[RetrievalConfig]) -> Table:
        recalls = np.array([[recall(q, ranking(q, config)) for q in questions] for config in configs])
        return cls(configs, questions, recalls, np.array([recall(q, q.flat) for q in questions]))

    def by_set(self, row: np.ndarray, mask: np.ndarray) -> dict[str, float]:
        names = np.array([q.set_name for q in self.questions])
        return {n: float(row[mask & (names == n)].mean()) for n in sorted(set(names[mask]))}

    def chosen(self, mask: np.ndarray) -> int:
        """On the masked questions: the best mean recall over sets among the settings no worse than flat_rag on any
        set (within TOLERANCE); when none is, the setting with the best worst-set margin."""
        flat = self.by_set(self.flat, mask)
        keys = []
        for row in self.recalls:
            mine = self.by_set(row, mask)
            worst = min(mine[n] - flat[n] for n in mine)
            keys.append((worst >= -TOLERANCE, float(np.mean(list(mine.values()))) if worst >= -TOLERANCE else worst))
        return max(range(len(keys)), key=lambda i: keys[i])


def named(configs: list[RetrievalConfig]) -> dict[str, int]:
    """The rows of the product's default and of its ablations (each channel off), where the grid holds them."""
    wanted = {
        "default": DEFAULT,
        "default, words off": dataclasses.replace(DEFAULT, words_weight=0.0),
        "default, dates off": dataclasses.replace(DEFAULT, date_weight=0.0),
        "default, neighbours off": dataclasses.replace(DEFAULT, neighbour_floor=2.0),
        "vectors only": dataclasses.replace(DEFAULT, words_weight=0.0, date_weight=0.0, neighbour_floor=2.0),
    }
    return {label: configs.index(config) for label, config in wanted.items() if config in configs}


def folds(table: Table) -> list[dict]:
    """Leave one set out, then leave one conversation out: the setting chosen on the rest, scored on the fold."""
    sets = np.array([q.set_name for q in table.questions])
    conversations = np.array([q.conversation for q in table.questions])
    results = []
    for held in sorted(set(sets)) if len(set(sets)) > 1 else []:
        results.append(_fold(table, f"set {held}", sets == held))
    for held in sorted(set(conversations)):
        results.append(_fold(table, f"conversation {held}", conversations == held))
    return results


def _fold(table: Table, name: str, held: np.ndarray) -> dict:
    index = table.chosen(~held)
    return {
        "fold": name,
        "chosen": _weights(table.configs[index]),
        "held_out": table.by_set(table.recalls[index], held),
        "flat_rag": table.by_set(table.flat, held),
    }


def _weights(config: RetrievalConfig) -> dict:
    return {name: getattr(config, name) for name in GRID}
