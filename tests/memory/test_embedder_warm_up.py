"""The embedding model loads when the web server and the worker start, so the first message is as fast as the rest."""

from __future__ import annotations

import gc
import logging
import threading
import types

import pytest

from memory.embeddings import EmbeddingUnavailable, embedder_warm, embedder_warm_in_background, use_embedder
from memoryos_site import celery as celery_module


@pytest.fixture(autouse=True)
def thawed_after():
    yield
    gc.unfreeze()  # a worker's start freezes what it loaded (memoryos_site.collector); the test process collects all


class Broken:
    name, dimension = "test:broken", 3

    def embed(self, texts):
        raise EmbeddingUnavailable("no model on disk")


def test_warming_up_embeds_one_text_through_the_seam(embedder):
    calls = embedder.calls

    assert embedder_warm() is not None
    assert embedder.calls == calls + 1


def test_a_model_that_cannot_load_is_logged_and_the_process_starts_anyway(caplog):
    with use_embedder(Broken()), caplog.at_level(logging.WARNING, logger="memory.embeddings"):
        assert embedder_warm() is None

    assert "could not be warmed up" in caplog.text


def test_it_is_off_in_tests_and_when_the_setting_is_off(settings, embedder):
    assert embedder_warm_in_background(why="web") is None

    settings.EMBEDDING_WARM_AT_START = True
    calls = embedder.calls
    thread = embedder_warm_in_background(why="web")
    thread.join(timeout=10)

    assert not thread.is_alive() and embedder.calls == calls + 1


def test_what_follows_the_warm_up_runs_in_its_thread_once_the_model_is_loaded(settings, embedder):
    settings.EMBEDDING_WARM_AT_START = True
    calls, seen = embedder.calls, []

    thread = embedder_warm_in_background(why="web", then=lambda: seen.append(embedder.calls))
    thread.join(timeout=10)

    assert seen == [calls + 1]


def test_a_solo_worker_warms_itself_and_a_prefork_worker_leaves_it_to_its_pool_processes(settings, embedder):
    settings.EMBEDDING_WARM_AT_START = True
    prefork = types.SimpleNamespace(pool=type("TaskPool", (), {"__module__": "celery.concurrency.prefork"})())
    solo = types.SimpleNamespace(pool=type("TaskPool", (), {"__module__": "celery.concurrency.solo"})())
    calls = embedder.calls

    celery_module.embedder_warm_in_worker(sender=prefork)
    assert embedder.calls == calls

    celery_module.embedder_warm_in_worker(sender=solo)
    celery_module.embedder_warm_in_pool_process()
    for thread in threading.enumerate():
        if thread.name == "embedder-warm-worker":
            thread.join(timeout=10)
    assert embedder.calls == calls + 2


def test_a_process_forked_during_the_warm_up_loads_its_own_model_with_free_locks(embedder):
    from memory import embeddings

    held = embeddings._embedder_lock
    held.acquire()  # as the warm-up thread holds it while it loads the model
    embeddings._warming = True
    try:
        embeddings._after_fork_in_child()

        assert embeddings._embedder is None and embeddings._warming is False
        assert embeddings._embedder_lock is not held and embeddings._embedder_lock.acquire(blocking=False)
        embeddings._embedder_lock.release()
    finally:
        held.release()
