"""Shared personas and seams for every test: two tenants, operators of each role, end users, a stranger."""

from __future__ import annotations

import pytest

from memory.embeddings import use_embedder
from memoryos_site.celery import app as celery_app
from tests.fakes import HashingEmbedder


@pytest.fixture(autouse=True)
def embedder(request):
    """The fake embedder at the seam, unless a test asks for the real model with @pytest.mark.real_embedder."""
    if request.node.get_closest_marker("real_embedder"):
        yield None
        return
    with use_embedder(HashingEmbedder()) as fake:
        yield fake


@pytest.fixture(autouse=True)
def celery_eager():
    """Tasks run in-process unless a test starts a real worker."""
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False
