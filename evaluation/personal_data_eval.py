"""Precision and recall of the personal-data detector (memory/personal_data.py) on a hand-labelled corpus.

The corpus (tests/data/personal_data_corpus.json) is fully labelled: every value of every category in a sentence
is listed, so a value the detector finds that is not listed is a false positive. Values are compared with their
spacing ignored.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory.personal_data import CATEGORIES, DEFAULT_GOVERNMENT_ID_PATTERNS, Detector

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "personal_data_corpus.json"


@dataclass
class Score:
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    misses: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 1.0

    @property
    def recall(self) -> float:
        expected = self.true_positives + self.false_negatives
        return self.true_positives / expected if expected else 1.0


def _key(value: str) -> str:
    return "".join(value.split())


def corpus_score(path: Path = CORPUS) -> tuple[dict[str, Score], int, float]:
    """Per category scores, the number of sentences, and the detector's mean time per sentence in microseconds."""
    corpus = json.loads(path.read_text())
    detector = Detector.configured(region=corpus["region"], government_id_patterns=DEFAULT_GOVERNMENT_ID_PATTERNS)
    scores = {category: Score() for category in CATEGORIES}
    for item in corpus["items"][:5]:
        detector.find(item["text"])  # the phone matcher loads its metadata on first use: not what is measured
    started = time.perf_counter()
    found_by_item = [detector.find(item["text"]) for item in corpus["items"]]
    elapsed = time.perf_counter() - started
    for item, findings in zip(corpus["items"], found_by_item, strict=True):
        for category in CATEGORIES:
            expected = [_key(v) for v in item.get(category, [])]
            found = [_key(f.value) for f in findings if f.category == category]
            score = scores[category]
            for value in found:
                if value in expected:
                    expected.remove(value)
                    score.true_positives += 1
                else:
                    score.false_positives += 1
                    score.false_alarms.append(f"{value!r} in {item['text']!r}")
            score.false_negatives += len(expected)
            score.misses += [f"{value!r} in {item['text']!r}" for value in expected]
    items = len(corpus["items"])
    return scores, items, 1e6 * elapsed / max(items, 1)


def corpus_report(path: Path = CORPUS) -> str:
    """The scores as a Markdown table (docs/results.md), then each miss and false alarm."""
    scores, items, micros = corpus_score(path)
    lines = [
        f"{items} sentences, {micros:.0f} µs per sentence (all detectors).",
        "",
        "| category | expected | found | precision | recall |",
        "|---|---|---|---|---|",
    ]
    for category, s in scores.items():
        expected, found = s.true_positives + s.false_negatives, s.true_positives + s.false_positives
        lines.append(f"| {category} | {expected} | {found} | {s.precision:.2f} | {s.recall:.2f} |")
    for category, s in scores.items():
        lines += [f"- {category} missed {miss}" for miss in s.misses]
        lines += [f"- {category} false alarm {alarm}" for alarm in s.false_alarms]
    return "\n".join(lines)
