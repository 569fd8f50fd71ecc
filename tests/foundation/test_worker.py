"""A real Celery worker process runs the memory updating that turn_record queues, through a real broker."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from memory.models import Page
from memoryos_site.database import sqlalchemy_broker_url
from tests import builders
from tests.foundation.processes import answers, child_env, database_url_for_children, publishing_to, wait_for, worker

REDIS = ("127.0.0.1", 6379)
REDIS_URL = "redis://127.0.0.1:6379/15"
PLACEMENT_TIMEOUT = 90  # the worker loads the real embedding model (about 10 s) before its first placement

pytestmark = [
    pytest.mark.worker,
    pytest.mark.slow,
    pytest.mark.real_embedder,
    pytest.mark.django_db(transaction=True),  # the worker sees only committed rows
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),  # inside kombu
]


def record_turns(end_user, assistant, count: int) -> None:
    space = builders.space_of(end_user, assistant)
    for n in range(1, count + 1):
        builders.turn(
            space,
            user_message=f"Message {n}: I am planning my garden and want to grow tomatoes and beans.",
            assistant_reply=f"Reply {n}: tomatoes like sun; beans need something to climb.",
        )


def assert_worker_places_the_evicted_page(alice, assistant, *, broker_url: str, env: dict, tmp_path) -> None:
    queue = f"memoryos-test-{uuid.uuid4().hex[:12]}"
    log = tmp_path / "worker.log"
    with worker(env=env, queue=queue, log=log) as process, publishing_to(broker_url, queue=queue):
        record_turns(alice, assistant, count=8)  # one past STM capacity (7): page 1 is evicted
        evicted = Page.objects.get(space__end_user=alice, seq=1)
        assert evicted.segment_id is None

        placed = wait_for(
            lambda: process.poll() is not None or Page.objects.get(pk=evicted.pk).segment_id is not None,
            timeout=PLACEMENT_TIMEOUT,
        )
        assert placed and process.poll() is None, f"the worker did not place the page; its log:\n{log.read_text()}"
    assert "pages_place_task" in log.read_text()


def test_a_worker_on_the_database_broker_places_the_evicted_page(alice, assistant, settings, tmp_path):
    assert settings.MEMORY_STM_CAPACITY == 7
    database_url = database_url_for_children()
    broker_url = sqlalchemy_broker_url(connection.settings_dict)  # what the worker derives from DATABASE_URL

    env = child_env(DATABASE_URL=database_url)
    assert_worker_places_the_evicted_page(alice, assistant, broker_url=broker_url, env=env, tmp_path=tmp_path)


def test_a_worker_on_redis_places_the_evicted_page(alice, assistant, tmp_path):
    if not answers(*REDIS):
        pytest.skip("no Redis answers on 127.0.0.1:6379; start one (redis-server) to run the Redis broker test")

    env = child_env(DATABASE_URL=database_url_for_children(), CELERY_BROKER_URL=REDIS_URL)
    assert_worker_places_the_evicted_page(alice, assistant, broker_url=REDIS_URL, env=env, tmp_path=tmp_path)
