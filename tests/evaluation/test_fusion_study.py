"""The fusion study scores a setting as retrieve() would rank under it, and chooses by the worst set first."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from evaluation import devsets, fusion_study
from evaluation.locomo_eval import conversation_ingest
from memory.models import MemorySpace
from memory.retrieval.config import DEFAULT
from memory.retrieval.search import retrieve
from memory.services.embedding_state import embedder_for_store
from memory.services.tenancy import tenant_create


@pytest.mark.slow  # the fusion study over its question sets, small
def test_the_study_ranks_each_question_as_retrieve_does_under_each_setting(db, django_capture_on_commit_callbacks):
    sample = devsets.assistant_facts(seed=2, conversations=1)[0]
    tenant = tenant_create(slug="study", name="study")
    with django_capture_on_commit_callbacks(execute=True):
        conversation_ingest(tenant=tenant, sample=sample)
    questions = fusion_study.questions_collect(
        set_name="facts", tenant=tenant, samples=[sample], embedder=embedder_for_store()
    )
    assert len(questions) == len(sample["qa"])
    space = MemorySpace.objects.get(tenant=tenant)
    for config in (DEFAULT, dataclasses.replace(DEFAULT, words_weight=0.0, neighbour_floor=2.0)):
        for question, qa in zip(questions, sample["qa"], strict=True):
            result = retrieve(space=space, query=qa["question"], record_visits=False, config=config)
            expected = [p.page.id for p in result.ranked][: fusion_study.K]
            assert fusion_study.ranking(question, config) == expected, qa["question"]


def test_a_setting_below_flat_on_any_set_loses_to_one_that_is_not_even_with_a_lower_mean():
    names = ["a", "a", "b", "b"]
    questions = [fusion_study.Question(n, "c", 4, [], *([np.array([])] * 5), {}, {}, {}, []) for n in names]
    recalls = np.array(
        [
            [1.0, 1.0, 0.0, 0.0],  # best on a, below flat on b: mean 0.5
            [0.5, 0.5, 0.5, 0.5],  # even with flat on b: mean 0.5 but no set below flat
            [0.5, 0.5, 0.0, 0.5],  # below flat on b
        ]
    )
    table = fusion_study.Table([DEFAULT] * 3, questions, recalls, np.array([0.5, 0.5, 0.5, 0.5]))
    assert table.chosen(np.ones(4, dtype=bool)) == 1
