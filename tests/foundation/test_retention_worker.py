"""A real Celery worker runs a tenant's daily retention batch through the database broker and removes the old pages.
(The daily task that queues one batch per tenant is tested eagerly: this worker consumes only its test queue.)"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.models import Page, RetentionRun
from memory.services.audit import Actor
from memory.services.retention import retention_policy_set
from memory.tasks import retention_run_task
from memoryos_site.database import sqlalchemy_broker_url
from tests import builders
from tests.foundation.processes import child_env, database_url_for_children, publishing_to, wait_for, worker

pytestmark = [
    pytest.mark.worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),  # the worker sees only committed rows
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),  # inside kombu
]


def test_a_worker_runs_the_daily_retention_of_each_tenant_with_a_policy(alice, tenant, tmp_path):
    space = builders.space_of(alice)
    long_ago = timezone.now() - timedelta(days=730)
    builders.segment_with_pages(space, summary="beans", messages=["I grow beans.", "Beans need sun."], at=long_ago)
    retention_policy_set(tenant=tenant, limits={"pages": 180}, actor=Actor.system("test"))
    broker_url = sqlalchemy_broker_url(connection.settings_dict)
    queue, log = f"memoryos-test-{uuid.uuid4().hex[:12]}", tmp_path / "worker.log"
    env = child_env(DATABASE_URL=database_url_for_children())
    with worker(env=env, queue=queue, log=log) as process, publishing_to(broker_url, queue=queue):
        retention_run_task.delay(tenant.pk, timezone.now().date().isoformat())
        done = wait_for(
            lambda: process.poll() is not None or RetentionRun.objects.filter(status="done").exists(), timeout=90
        )
        assert done and process.poll() is None, f"no retention run; the worker's log:\n{log.read_text()}"
    run = RetentionRun.objects.get()
    assert (run.trigger, run.day, run.removed["pages"]) == ("beat", timezone.now().date(), 2)
    assert not Page.objects.filter(space=space).exists()
    assert "retention_run_task" in log.read_text()
