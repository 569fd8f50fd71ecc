"""How much of the exact cosine top k the vector channel's first pass keeps (docs/decisions/0023-two-bit-first-pass.md).

The channel ranks a space's vectors by the Hamming distance of their codes, keeps the first `pool`, and ranks those by
exact cosine. Here the same two passes run in numpy over the pooled pages of several sets (a space of a full user's
size), and the result is compared with the exact top k for questions drawn from each set. Codes are computed as the
database computes them: one bit a dimension (`binary_quantize`, the sign) or two (`memory_vector_code`: a thermometer
code, levels below -t, between, above +t, with t = c/√d).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

ONE_BIT = None  # the code's threshold factor c for the sign alone
THRESHOLD_FACTOR = 0.385  # memory_vector_code's c (migration 0034)


@dataclass(frozen=True)
class PooledSets:
    """Page vectors of several sets in one pool, and questions' vectors with the set each came from."""

    pages: np.ndarray
    questions: np.ndarray
    question_set: list[str]

    def drawn(self, *, per_set: int, seed: int = 1) -> dict[str, list[int]]:
        """Up to `per_set` question indexes from each set, drawn with `seed`."""
        rng = random.Random(seed)
        by_set: dict[str, list[int]] = {}
        for index, name in enumerate(self.question_set):
            by_set.setdefault(name, []).append(index)
        return {name: sorted(rng.sample(found, min(per_set, len(found)))) for name, found in by_set.items()}


def codes(vectors: np.ndarray, factor: float | None) -> np.ndarray:
    """Each vector's code as 0/1 columns: the sign (factor None), or "above +t" then "above -t" per dimension."""
    if factor is None:
        return (vectors > 0).astype(np.int8)
    threshold = factor / np.sqrt(vectors.shape[1])
    return np.concatenate([vectors > threshold, vectors > -threshold], axis=1).astype(np.int8)


def kept_share(
    pooled: PooledSets, questions: Sequence[int], *, factor: float | None, pool: int, ks: Iterable[int] = (10, 20, 100)
) -> dict[int, float]:
    """k → the mean share of each question's exact top k that the two passes also rank in their top k."""
    page_codes = codes(pooled.pages, factor).astype(np.int16)
    kept: dict[int, list[float]] = {k: [] for k in ks}
    for index in questions:
        question = pooled.questions[index]
        exact = np.argsort(-(pooled.pages @ question), kind="stable")
        distance = np.abs(page_codes - codes(question[None], factor).astype(np.int16)[0]).sum(axis=1)
        first = np.argsort(distance, kind="stable")[:pool]
        reranked = first[np.argsort(-(pooled.pages[first] @ question), kind="stable")]
        for k in kept:
            kept[k].append(len(set(exact[:k].tolist()) & set(reranked[:k].tolist())) / k)
    return {k: float(np.mean(shares)) for k, shares in kept.items()}


def best_factor_left_out(
    results: dict[tuple[float | None, int, str], dict[int, float]], *, factors: Sequence[float], pool: int, held: str
) -> float:
    """The factor with the best mean top 20 at `pool` over every set but `held` (leave-one-set-out)."""
    others = {name for (_, _, name) in results if name != held}
    return max(factors, key=lambda factor: np.mean([results[(factor, pool, name)][20] for name in others]))
