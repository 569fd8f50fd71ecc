"""LoCoMo scoring: answer F1 (two variants), BLEU-1, evidence ids and recall@k, percentiles. Pure functions.

- `f1_set`: F1 over token *sets* as MemoryOS, A-Mem and mem0 compute it (lowercase, tokens `\\b\\w+\\b`).
- `f1_locomo`: the original LoCoMo code: commas removed, lowercase, punctuation stripped, a/an/the/and dropped,
  Porter stems, F1 over token *multisets*; category 1 (multi-hop) splits both sides on commas and averages, over the
  gold parts, the best match among the predicted parts; category 3 compares only the gold text before the first ";";
  category 5 (adversarial) scores 1 when the answer says the thing was not mentioned.
- `bleu1`: NLTK `sentence_bleu`, weights (1, 0, 0, 0), smoothing method 1, on the same lowercase `\\w+` tokens as
  `f1_set` (mem0 tokenises with `nltk.word_tokenize`, which needs a data download; on answers the two differ only
  in punctuation tokens).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from nltk.stem import PorterStemmer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP, ADVERSARIAL = 1, 2, 3, 4, 5
MAIN_CATEGORIES = (MULTI_HOP, TEMPORAL, OPEN_DOMAIN, SINGLE_HOP)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

TOKEN = re.compile(r"\b\w+\b")
DIA_ID = re.compile(r"D\d+:\d+")
ARTICLES = re.compile(r"\b(a|an|the|and)\b")
PUNCTUATION = str.maketrans("", "", string.punctuation)
NOT_MENTIONED = ("no information available", "not mentioned")

_stemmer = PorterStemmer()
_smoothing = SmoothingFunction().method1


def answer_text(qa: dict) -> str:
    """The gold answer as text: LoCoMo answers are sometimes ints; category 5 has none."""
    answer = qa.get("answer")
    return "" if answer is None else str(answer)


def evidence_ids(evidence: Iterable) -> list[str]:
    """The dia_ids of a question's evidence, recovering malformed entries ("D8:6; D9:17" holds two), in order."""
    found: list[str] = []
    for item in evidence or []:
        for dia_id in DIA_ID.findall(str(item)):
            if dia_id not in found:
                found.append(dia_id)
    return found


# --- F1 and BLEU ------------------------------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    return TOKEN.findall(str(text).lower())


def _f1(common: int, predicted: int, gold: int) -> float:
    if common == 0:
        return 0.0
    precision, recall = common / predicted, common / gold
    return 2 * precision * recall / (precision + recall)


def f1_set(prediction: str, gold: str) -> float:
    """Token-set F1 (MemoryOS / A-Mem / mem0)."""
    predicted, expected = set(tokens(prediction)), set(tokens(gold))
    return _f1(len(predicted & expected), len(predicted), len(expected))


def normalize_locomo(text: str) -> str:
    """LoCoMo's answer normalisation: no commas, lowercase, no punctuation, no a/an/the/and, single spaces."""
    text = str(text).replace(",", "").lower().translate(PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def _stems(text: str) -> list[str]:
    return [_stemmer.stem(word) for word in normalize_locomo(text).split()]


def f1_stemmed(prediction: str, gold: str) -> float:
    """Multiset F1 over Porter stems of the normalised texts."""
    predicted, expected = _stems(prediction), _stems(gold)
    common = sum((Counter(predicted) & Counter(expected)).values())
    return _f1(common, len(predicted), len(expected))


def f1_locomo(prediction: str, gold: str, category: int) -> float:
    """F1 as the original LoCoMo evaluation computes it for a question of `category`."""
    if category == ADVERSARIAL:
        return float(any(phrase in prediction.lower() for phrase in NOT_MENTIONED))
    if category == OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    if category == MULTI_HOP:
        predicted = [part.strip() for part in prediction.split(",")]
        expected = [part.strip() for part in gold.split(",")]
        return float(np.mean([max(f1_stemmed(p, g) for p in predicted) for g in expected]))
    return f1_stemmed(prediction, gold)


def bleu1(prediction: str, gold: str) -> float:
    """BLEU-1: NLTK sentence_bleu, weights (1, 0, 0, 0), smoothing method 1; 0 when either side has no token."""
    predicted, expected = tokens(prediction), tokens(gold)
    if not predicted or not expected:
        return 0.0
    return float(sentence_bleu([expected], predicted, weights=(1, 0, 0, 0), smoothing_function=_smoothing))


# --- Evidence recall ---------------------------------------------------------------------------------------------


def recall_at_k(evidence: Sequence[str], ranked: Sequence[Iterable[str]], k: int) -> float | None:
    """Share of the evidence dia_ids held by the first k retrieved pages (each page: its dia_ids); None if no
    evidence."""
    if not evidence:
        return None
    seen = {dia_id for page in ranked[:k] for dia_id in page}
    return sum(1 for dia_id in evidence if dia_id in seen) / len(evidence)


def recall_curve(evidence: Sequence[str], ranked: Sequence[Iterable[str]], max_k: int) -> list[float] | None:
    """recall_at_k for k = 1 … max_k."""
    if not evidence:
        return None
    return [recall_at_k(evidence, ranked, k) for k in range(1, max_k + 1)]


# --- Aggregates --------------------------------------------------------------------------------------------------


def mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def percentiles(values: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float | None]:
    """{"p50": …, "p95": …, "p99": …} of `values` (None when there are none), rounded to 0.01."""
    if not len(values):
        return {f"p{p}": None for p in points}
    return {f"p{p}": round(float(np.percentile(values, p)), 2) for p in points}


def by_category(records: Iterable[tuple[int, float | None]]) -> dict[str, float | None]:
    """Means per category ("1" … "5") and "overall" over the main categories 1–4 (category 5 stays apart)."""
    grouped: dict[int, list[float]] = {}
    for category, value in records:
        if value is not None:
            grouped.setdefault(category, []).append(value)
    result: dict[str, float | None] = {str(c): mean(grouped.get(c, [])) for c in (*MAIN_CATEGORIES, ADVERSARIAL)}
    result["overall"] = mean(v for c in MAIN_CATEGORIES for v in grouped.get(c, []))
    return result
