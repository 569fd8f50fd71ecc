"""first_pass_recall: the numpy first pass codes vectors as the database does, and measures what it keeps honestly."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from evaluation.first_pass_recall import (
    ONE_BIT,
    THRESHOLD_FACTOR,
    PooledSets,
    best_factor_left_out,
    codes,
    kept_share,
)
from memory.embeddings import use_embedder
from memory.retrieval.rows import vector_text
from memory.text import PASSAGE_CHARS
from tests.fakes import HashingEmbedder

DIMENSIONS = 384


def unit_vectors(count: int, *, seed: int = 1) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def clear_of_the_thresholds(vector: np.ndarray) -> bool:
    """No coordinate so near 0 or ±t that half precision could round it to the other side."""
    threshold = THRESHOLD_FACTOR / np.sqrt(DIMENSIONS)
    return min(np.abs(vector).min() * 10, np.abs(np.abs(vector) - threshold).min()) > 1e-4


def database_code(function: str, vector: np.ndarray) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s::halfvec)::text", [vector_text(vector)])
        return [int(bit) for bit in cursor.fetchone()[0]]


@pytest.mark.django_db
def test_its_codes_are_the_databases():
    vectors = [vector for vector in unit_vectors(40) if clear_of_the_thresholds(vector)][:3]
    assert vectors

    for vector in vectors:
        assert codes(vector[None], ONE_BIT)[0].tolist() == database_code("binary_quantize", vector)
        assert codes(vector[None], THRESHOLD_FACTOR)[0].tolist() == database_code("memory_vector_code", vector)


def test_a_first_pass_that_keeps_every_page_keeps_the_whole_exact_top_k():
    pooled = PooledSets(pages=unit_vectors(60), questions=unit_vectors(5, seed=2), question_set=["a"] * 5)

    kept = kept_share(pooled, range(5), factor=THRESHOLD_FACTOR, pool=60, ks=(10, 20))

    assert kept == {10: 1.0, 20: 1.0}


def test_a_first_pass_that_keeps_fewer_pages_loses_some_of_the_exact_top_k():
    pooled = PooledSets(pages=unit_vectors(400), questions=unit_vectors(20, seed=2), question_set=["a"] * 20)

    one_bit = kept_share(pooled, range(20), factor=ONE_BIT, pool=20, ks=(20,))[20]
    two_bits = kept_share(pooled, range(20), factor=THRESHOLD_FACTOR, pool=20, ks=(20,))[20]

    assert 0 < one_bit < 1 and 0 < two_bits < 1


def test_the_factor_is_chosen_on_the_sets_left_in():
    results = {
        (0.3, 250, "a"): {20: 0.99},
        (0.3, 250, "b"): {20: 0.90},
        (0.5, 250, "a"): {20: 0.95},
        (0.5, 250, "b"): {20: 0.97},
    }

    assert best_factor_left_out(results, factors=[0.3, 0.5], pool=250, held="a") == 0.5
    assert best_factor_left_out(results, factors=[0.3, 0.5], pool=250, held="b") == 0.3


def test_questions_are_drawn_from_every_set_the_same_way_for_the_same_seed():
    pooled = PooledSets(pages=unit_vectors(3), questions=unit_vectors(30), question_set=["a"] * 20 + ["b"] * 10)

    drawn = pooled.drawn(per_set=15, seed=4)

    assert {name: len(found) for name, found in drawn.items()} == {"a": 15, "b": 10}
    assert pooled.drawn(per_set=15, seed=4) == drawn


def _report(tmp_path, embedder: HashingEmbedder, **options) -> str:
    """What first_pass_recall prints over the generated sets (no LoCoMo file), 5 questions a set, a pool of 30."""
    out = io.StringIO()
    with use_embedder(embedder):
        call_command(
            "first_pass_recall",
            locomo=tmp_path / "absent.json",
            per_set=5,
            pools="30",
            **options,
            stdout=out,
            stderr=io.StringIO(),
        )
    return out.getvalue()


def test_the_command_reports_each_code_and_pool_and_the_factor_chosen_by_leaving_a_set_out(tmp_path):
    report = _report(tmp_path, HashingEmbedder(), factors="one-bit,0.3,0.5")

    assert "one bit pool   30: mean" in report and "two bits c=0.5 pool   30" in report
    assert "assistant_facts 5, technical_long 5" in report
    assert "pool 30, assistant_facts held out: c=" in report


def test_with_passages_the_command_pools_the_passages_of_the_long_pages(tmp_path):
    embedder = HashingEmbedder()
    report = _report(tmp_path, embedder, factors="0.385", passages=True)

    pooled = int(report.split(" passages pooled")[0].split()[-1])
    assert pooled > 0 and "two bits c=0.385 pool   30" in report
    assert all(len(text) <= PASSAGE_CHARS for text in embedder.inputs[:pooled])  # passages, not whole pages


@pytest.mark.parametrize(
    ("option", "value"), [("factors", "one-bit,big"), ("factors", "-1"), ("pools", "0"), ("pools", "2x")]
)
def test_the_command_refuses_a_factor_or_pool_it_cannot_use_before_it_embeds_anything(option, value):
    embedder = HashingEmbedder()
    with use_embedder(embedder), pytest.raises(CommandError, match=f"--{option}"):
        call_command("first_pass_recall", **{option: value}, stdout=io.StringIO(), stderr=io.StringIO())

    assert embedder.inputs == []
