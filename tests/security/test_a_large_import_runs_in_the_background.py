"""Also seen in issue 29: a 960-page import ran in the request for 40 s, past gunicorn's 30 s timeout. A bundle of
more than MEMORY_IMPORT_SYNC_PAGES pages is checked at once, then imported by the worker with its progress shown."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from memory.models import AuditEntry, ImportStatus, MemoryImport, Page
from memory.services.import_jobs import memory_import_run
from memory.services.jobs import jobs_requeue
from tests import builders
from tests.api.conftest import client_for, make_token
from tests.bundles import bundle_of, governed_memory

URL = "/api/v1/users/stranger/import/"


@pytest.fixture
def bundle(alice, assistant, settings, django_capture_on_commit_callbacks) -> dict:
    """Alice's 12 pages, with imports of more than 5 pages in the background."""
    governed_memory(alice, assistant, django_capture_on_commit_callbacks)
    settings.MEMORY_IMPORT_SYNC_PAGES = 5
    return bundle_of(alice)


@pytest.fixture
def globex(other_tenant, stranger):
    return client_for(make_token(other_tenant))


def queue(globex, bundle, capture) -> tuple[dict, list]:
    with capture() as queued:
        response = globex.post(URL, {"bundle": bundle}, format="json", HTTP_X_REQUEST_ID="r-7")
    assert response.status_code == 202, response.content
    return response.json(), queued


def test_a_large_bundle_is_answered_at_once_and_imported_by_the_worker(
    globex, bundle, stranger, django_capture_on_commit_callbacks
):
    body, queued = queue(globex, bundle, django_capture_on_commit_callbacks)
    assert body["status"] == "queued" and body["counts"]["pages"] == 12
    assert not Page.objects.filter(space__end_user=stranger).exists()
    waiting = globex.get(f"/api/v1/imports/{body['import_id']}/").json()
    assert (waiting["status"], waiting["progress"]) == ("queued", 0)

    with django_capture_on_commit_callbacks(execute=True):
        queued[0]()  # the worker runs the task

    done = globex.get(f"/api/v1/imports/{body['import_id']}/").json()
    assert (done["status"], done["progress"], done["counts"]["pages"]) == ("done", 100, 12)
    assert Page.objects.filter(space__end_user=stranger).count() == 12
    assert MemoryImport.objects.get(pk=body["import_id"]).bundle is None
    entry = AuditEntry.objects.get(action="memory.import")
    assert (entry.actor_kind, entry.request_id, entry.target_id) == ("api_token", "r-7", body["import_id"])


def test_a_bundle_the_import_would_refuse_is_refused_at_once_and_nothing_is_queued(globex, bundle, stranger):
    builders.pause(builders.space_of(stranger))
    response = globex.post(URL, {"bundle": bundle}, format="json")
    assert response.status_code == 409
    assert not MemoryImport.objects.exclude(status=ImportStatus.DONE).exists()


def test_running_the_task_twice_imports_once(globex, bundle, stranger, django_capture_on_commit_callbacks):
    body, _ = queue(globex, bundle, django_capture_on_commit_callbacks)
    assert memory_import_run(import_id=body["import_id"]).status == ImportStatus.DONE
    assert memory_import_run(import_id=body["import_id"]) is None
    assert Page.objects.filter(space__end_user=stranger).count() == 12


def test_an_import_whose_worker_died_is_queued_again_by_the_sweep(
    globex, bundle, stranger, settings, django_capture_on_commit_callbacks
):
    body, _ = queue(globex, bundle, django_capture_on_commit_callbacks)
    MemoryImport.objects.filter(pk=body["import_id"]).update(
        status=ImportStatus.RUNNING, attempts=1, lease_until=timezone.now() - timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_requeue()["import"] == 1
    assert MemoryImport.objects.get(pk=body["import_id"]).status == ImportStatus.DONE
    assert Page.objects.filter(space__end_user=stranger).count() == 12


def test_an_import_refused_by_the_time_it_runs_fails_with_why_and_keeps_no_bundle(
    globex, bundle, stranger, django_capture_on_commit_callbacks
):
    body, _ = queue(globex, bundle, django_capture_on_commit_callbacks)
    builders.turn(builders.space_of(stranger), user_message="Meanwhile, a turn.")
    failed = memory_import_run(import_id=body["import_id"])
    assert failed.status == ImportStatus.FAILED and "already holds 1 pages" in failed.error
    assert failed.bundle is None
    assert globex.get(f"/api/v1/imports/{body['import_id']}/").json()["status"] == "failed"


def test_the_console_queues_a_large_staged_bundle_and_shows_its_progress_then_the_import(
    client, dpo_user, bob, bundle, django_capture_on_commit_callbacks
):
    client.force_login(dpo_user)
    url = f"/console/acme/users/{bob.pk}/import/"
    client.post(url, {"bundle": SimpleUploadedFile("export.json", json.dumps(bundle).encode())})
    staged = MemoryImport.objects.get(end_user=bob, status=ImportStatus.STAGED)

    with django_capture_on_commit_callbacks() as queued:
        confirm = client.post(f"{url}{staged.pk}/")
    assert confirm["Location"] == f"/console/acme/users/{bob.pk}/gdpr/"
    page = client.get(confirm["Location"]).content.decode()
    assert "Importing 12 pages in the background" in page and "Queued" in page
    assert not Page.objects.filter(space__end_user=bob).exists()

    with django_capture_on_commit_callbacks(execute=True):
        queued[0]()
    assert MemoryImport.objects.get(pk=staged.pk).status == ImportStatus.DONE
    assert Page.objects.filter(space__end_user=bob).count() == 12
    assert AuditEntry.objects.filter(action="memory.import", actor_label="dpo-of-acme").count() == 1


@pytest.mark.parametrize("memory", [5, "many", [{"pages": 7}], [3, {"pages": "x"}]])
def test_a_malformed_bundle_is_refused_with_its_first_problem_not_a_500(globex, bundle, stranger, memory):
    response = globex.post(URL, {"bundle": {**bundle, "memory": memory}}, format="json")
    assert response.status_code == 400, response.content
    assert not MemoryImport.objects.exists()
