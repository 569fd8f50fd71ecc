"""LoCoMo scoring against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from evaluation import scoring


def test_set_f1_counts_each_token_once_and_ignores_case():
    # pred {caroline, went, to, the, lgbtq, support, group}, gold {lgbtq, support, group}: P = 3/7, R = 1
    assert scoring.f1_set("Caroline went to the LGBTQ support group", "LGBTQ support group") == pytest.approx(0.6)
    # "the the cat" is the set {the, cat}: P = R = 1
    assert scoring.f1_set("the the cat", "The cat.") == pytest.approx(1.0)
    assert scoring.f1_set("", "cat") == 0.0
    assert scoring.f1_set("dog", "cat") == 0.0


def test_locomo_f1_stems_drops_articles_and_counts_repeats():
    # she run marathon / run marathon: P = 2/3, R = 1
    assert scoring.f1_locomo("She runs marathons", "running marathon", 4) == pytest.approx(0.8)
    # a, an, the, and, commas and punctuation are gone before counting
    assert scoring.f1_locomo("The cat and a dog!", "cat, dog", 4) == pytest.approx(1.0)
    # multiset: "cat cat" against "cat" shares one token: P = 1/2, R = 1
    assert scoring.f1_locomo("cat cat", "cat", 2) == pytest.approx(2 / 3)


def test_multi_hop_answers_are_split_on_commas_and_averaged_over_the_gold_parts():
    # gold parts: hiking → best 1.0, swimming → best 0.0; mean 0.5
    assert scoring.f1_locomo("hiking", "hiking, swimming", 1) == pytest.approx(0.5)
    # without the comma rule the same pair scores P = 1, R = 1/2
    assert scoring.f1_locomo("hiking", "hiking, swimming", 4) == pytest.approx(2 / 3)
    # every gold part takes its best predicted part
    assert scoring.f1_locomo("swimming, painting, hiking", "hiking, swimming", 1) == pytest.approx(1.0)


def test_open_domain_gold_is_cut_at_the_first_semicolon():
    gold = "Likely yes; she enjoys being outdoors"
    assert scoring.f1_locomo("likely yes", gold, 3) == pytest.approx(1.0)
    assert scoring.f1_locomo("likely yes", gold, 4) < 1.0


def test_adversarial_answers_score_when_they_say_it_was_not_mentioned():
    assert scoring.f1_locomo("That was not mentioned in the conversation.", "", 5) == 1.0
    assert scoring.f1_locomo("She went to Paris.", "", 5) == 0.0


def test_int_answers_are_scored_as_text():
    gold = scoring.answer_text({"question": "Which year?", "answer": 2022, "category": 2})
    assert gold == "2022"
    # {in, 2022} against {2022}: P = 1/2, R = 1
    assert scoring.f1_set("In 2022", gold) == pytest.approx(2 / 3)
    assert scoring.f1_locomo("In 2022", gold, 2) == pytest.approx(2 / 3)
    assert scoring.answer_text({"question": "?", "category": 5}) == ""


def test_bleu1_is_clipped_unigram_precision_times_the_brevity_penalty():
    # 2 of 3 predicted unigrams match; the prediction is longer than the gold, so no penalty
    assert scoring.bleu1("the cat sat", "the cat") == pytest.approx(2 / 3)
    # precision 1, but c = 1 < r = 3: BP = exp(1 − 3/1)
    assert scoring.bleu1("cat", "the cat sat") == pytest.approx(math.exp(-2))
    assert scoring.bleu1("dog", "cat") == pytest.approx(0.0, abs=1e-6)
    assert scoring.bleu1("", "cat") == 0.0


def test_malformed_evidence_ids_are_recovered_and_junk_dropped():
    assert scoring.evidence_ids(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert scoring.evidence_ids(["D1:18", "D", "D1:20"]) == ["D1:18", "D1:20"]
    assert scoring.evidence_ids(["D:11:26", "D20:21", "D20:21"]) == ["D20:21"]
    assert scoring.evidence_ids([]) == []


def test_recall_at_k_is_the_share_of_evidence_in_the_first_k_pages():
    evidence = ["D1:1", "D2:3"]
    ranked = [["D1:1", "D1:2"], ["D3:1"], ["D2:3", "D2:4"]]
    assert scoring.recall_at_k(evidence, ranked, 1) == 0.5
    assert scoring.recall_at_k(evidence, ranked, 2) == 0.5
    assert scoring.recall_at_k(evidence, ranked, 3) == 1.0
    assert scoring.recall_curve(evidence, ranked, 4) == [0.5, 0.5, 1.0, 1.0]
    assert scoring.recall_at_k([], ranked, 3) is None


def test_category_means_keep_adversarial_out_of_overall():
    records = [(1, 1.0), (2, 0.0), (4, 0.5), (5, 1.0), (4, None)]
    means = scoring.by_category(records)
    assert means == {"1": 1.0, "2": 0.0, "3": None, "4": 0.5, "5": 1.0, "overall": 0.5}


def test_percentiles_of_nothing_are_none():
    assert scoring.percentiles([]) == {"p50": None, "p95": None, "p99": None}
    assert scoring.percentiles([1, 2, 3, 4, 5], (50,)) == {"p50": 3.0}
