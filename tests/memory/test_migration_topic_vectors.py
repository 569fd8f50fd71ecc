"""Migration 0018 on pages stored before it: a topic vector equal to the page's own vector is no longer stored (the
page's vector stands for it), one that differs (a summary's) stays; backwards, every placed page has its copy again."""

from __future__ import annotations

import numpy as np
import pytest

from memory.models import Page
from tests import builders
from tests.memory.migrating import latest as _latest
from tests.memory.migrating import migrate as _migrate

BEFORE = [("memory", "0017_retrieval_pages_rewritten_inline")]


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_copies_of_the_page_vector_are_cleared_and_summary_vectors_kept(space):
    segment = builders.segment_with_pages(space, summary="bread", messages=["baking sourdough bread", "rye loaves"])
    copied, summarised = segment.pages.order_by("seq")
    summary_vector = np.roll(np.asarray(summarised.embedding), 1)
    Page.objects.filter(pk=copied.pk).update(topic_embedding=copied.embedding)
    Page.objects.filter(pk=summarised.pk).update(topic_embedding=summary_vector)
    try:
        _migrate(BEFORE)
        _migrate(_latest())

        copied.refresh_from_db()
        summarised.refresh_from_db()
        assert copied.topic_embedding is None
        assert np.array_equal(copied.topic_vector, copied.embedding)
        assert np.allclose(summarised.topic_embedding, summary_vector)

        _migrate(BEFORE)
        copied.refresh_from_db(fields=["embedding", "topic_embedding"])  # later columns are gone at 0017
        assert np.array_equal(copied.topic_embedding, copied.embedding)
    finally:
        _migrate(_latest())
