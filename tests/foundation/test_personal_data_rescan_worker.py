"""A real Celery worker runs the personal-data re-scan the console queues, through the database broker."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from memory.models import KnowledgeEntry, Page, PersonalDataScan, ScanStatus
from memory.services.audit import Actor
from memory.services.personal_data import personal_data_scan_start
from memoryos_site.database import sqlalchemy_broker_url
from tests import builders
from tests.foundation.processes import child_env, database_url_for_children, publishing_to, wait_for, worker

pytestmark = [
    pytest.mark.worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),  # the worker sees only committed rows
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),  # inside kombu
]
EMAIL = "ann.lee@example.co.uk"


def test_a_worker_redacts_stored_memory_and_reports_progress(tenant, alice, assistant, tmp_path):
    space = builders.space_of(alice, assistant)
    page = builders.turn(space, user_message=f"Mail {EMAIL}").page
    fact = builders.knowledge(alice, text=f"The user's email is {EMAIL}.", embedded=False)
    builders.personal_data_policy(tenant, email="do_not_store")
    queue, log = f"memoryos-test-{uuid.uuid4().hex[:12]}", tmp_path / "worker.log"
    broker_url = sqlalchemy_broker_url(connection.settings_dict)

    with worker(env=child_env(DATABASE_URL=database_url_for_children()), queue=queue, log=log) as process:
        with publishing_to(broker_url, queue=queue):
            scan = personal_data_scan_start(tenant=tenant, actor=Actor.system("test"))
        finished = wait_for(
            lambda: (
                process.poll() is not None
                or PersonalDataScan.objects.get(pk=scan.pk).status in (ScanStatus.DONE, ScanStatus.FAILED)
            ),
            timeout=60,
        )
        assert finished and process.poll() is None, f"the worker did not finish the scan; its log:\n{log.read_text()}"

    scan.refresh_from_db()
    assert (scan.status, scan.scanned, scan.total, scan.redacted) == (ScanStatus.DONE, 3, 3, 2)
    assert Page.objects.get(pk=page.pk).user_message == "Mail [email]"
    assert KnowledgeEntry.objects.get(pk=fact.pk).text == "The user's email is [email]."
    assert "personal_data_rescan_task" in log.read_text()
