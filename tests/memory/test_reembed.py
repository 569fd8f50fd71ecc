"""Changing the embedding model is never a silent mismatch: retrieval refuses, memory_reembed fixes it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from memory.embeddings import use_embedder
from memory.models import EmbeddingState, Page, Segment
from memory.retrieval.search import retrieve
from memory.services.embedding_state import EmbeddingMismatch, forget_verification
from tests import builders
from tests.fakes import HashingEmbedder


class OtherModel(HashingEmbedder):
    name = "test:other-model"


@pytest.fixture(autouse=True)
def fresh_verification():
    forget_verification()
    yield
    forget_verification()


def test_a_changed_model_is_refused_until_memory_is_reembedded(space, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        builders.turns(space, messages=[f"hiking with my dog number {i}" for i in range(10)])
    assert EmbeddingState.objects.get().model == "test:hashing"
    forget_verification()
    with use_embedder(OtherModel(dimension=32)), pytest.raises(EmbeddingMismatch, match="memory_reembed"):
        retrieve(space=space, query="hiking")
    out = StringIO()
    with use_embedder(OtherModel(dimension=32)):
        call_command("memory_reembed", stdout=out)
        result = retrieve(space=space, query="hiking dog")
    assert "Done: 10 pages" in out.getvalue()
    assert EmbeddingState.objects.get().dimension == 32
    assert all(len(v) == 32 for v in Page.objects.filter(segment__isnull=False).values_list("embedding", flat=True))
    assert all(len(v) == 32 for v in Segment.objects.values_list("embedding", flat=True))
    assert result.pages
