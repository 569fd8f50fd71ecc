"""Governance over the API: the audit log, erasure (dry run, real run, receipt) and exports."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import AuditEntry, EndUser, ErasureReceipt, ExportJob, JobStatus, Page
from memory.selectors.governance import audit_verify
from memory.services.gdpr_export import export_build
from tests.api.conftest import error_of

# --- Audit log --------------------------------------------------------------------------------------------------


def test_the_audit_log_is_newest_first_filtered_and_paginated(api, memory):
    api.patch(f"/api/v1/pages/{memory.mtm_page.pk}/", {"pinned": True, "reason": "keep"}, format="json")
    api.post("/api/v1/retrieve/", {"user": "alice", "assistant": "ava", "query": "beagle"}, format="json")

    everything = api.get("/api/v1/audit/").json()
    pins = api.get("/api/v1/audit/", {"action": "page.pin", "user": "alice"}).json()
    one = api.get("/api/v1/audit/", {"page_size": 1}).json()

    assert [e["action"] for e in everything["results"]] == ["memory.read", "page.pin", "api_token.create"]
    assert [(e["action"], e["user"], e["actor_kind"], e["reason"]) for e in pins["results"]] == [
        ("page.pin", "alice", "api_token", "keep")
    ]
    assert len(one["results"]) == 1 and one["count"] == 3


def test_audit_filters_are_validated(api, tenant):
    response = api.get("/api/v1/audit/", {"since": "last week", "actor_kind": "robot"})

    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"since", "actor_kind"}


def test_the_audit_log_can_be_read_from_a_point_in_time(api, memory):
    later = timezone.now()
    api.patch(f"/api/v1/pages/{memory.mtm_page.pk}/", {"pinned": True, "reason": "keep"}, format="json")

    body = api.get("/api/v1/audit/", {"since": later.isoformat()}).json()

    assert [e["action"] for e in body["results"]] == ["page.pin"]


# --- Erasure ----------------------------------------------------------------------------------------------------


def test_a_dry_run_counts_what_would_be_erased_and_changes_nothing(api, memory):
    response = api.post("/api/v1/users/alice/erasure/", {"dry_run": True, "reason": "asked"}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["dry_run"] is True and body["receipt"] is None
    assert body["counts"]["memory_page"] == 2 and body["counts"]["memory_enduser"] == 1
    assert Page.objects.count() == 2 and not ErasureReceipt.objects.exists()


def test_a_real_erasure_removes_the_user_and_answers_a_verifiable_receipt(api, memory, tenant):
    response = api.post(
        "/api/v1/users/alice/erasure/", {"dry_run": False, "reason": "Asked to be forgotten"}, format="json"
    )

    body = response.json()
    assert response.status_code == 200 and body["dry_run"] is False
    assert body["counts"]["memory_page"] == 2
    receipt = body["receipt"]
    assert receipt["verified"] is True and receipt["legal_basis"] == "GDPR Art. 17 (right to erasure)"
    assert receipt["actor_kind"] == "api_token" and receipt["reason"] == "Asked to be forgotten"
    assert not EndUser.objects.filter(external_id="alice").exists() and not Page.objects.exists()
    assert api.get(f"/api/v1/erasure-receipts/{receipt['id']}/").json()["receipt_hash"] == receipt["receipt_hash"]
    assert [r["id"] for r in api.get("/api/v1/erasure-receipts/").json()["results"]] == [receipt["id"]]
    assert api.get("/api/v1/users/alice/").status_code == 404
    assert audit_verify(tenant=tenant).ok


def test_a_real_erasure_needs_a_reason(api, memory):
    response = api.post("/api/v1/users/alice/erasure/", {"dry_run": False}, format="json")

    assert response.status_code == 400
    assert "reason" in error_of(response)["fields"]
    assert EndUser.objects.filter(external_id="alice").exists()


def test_erasure_keeps_a_given_legal_basis(api, memory):
    body = {"dry_run": False, "reason": "court order", "legal_basis": "Court order 12/2026"}

    receipt = api.post("/api/v1/users/alice/erasure/", body, format="json").json()["receipt"]

    assert receipt["legal_basis"] == "Court order 12/2026"


def test_dry_run_is_the_default(api, memory):
    assert api.post("/api/v1/users/alice/erasure/", {}, format="json").json()["dry_run"] is True


# --- Exports ----------------------------------------------------------------------------------------------------


def test_get_without_an_export_is_404_and_starts_nothing(api, alice):
    response = api.get("/api/v1/users/alice/export/")

    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert not ExportJob.objects.exists() and not AuditEntry.objects.filter(action="gdpr.export").exists()


def test_post_starts_an_export_and_get_answers_it_without_starting_another(
    api, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        started = api.post("/api/v1/users/alice/export/")

    assert started.status_code == 202
    job = started.json()
    assert (job["user"], job["status"], job["download_url"]) == ("alice", "queued", None)
    again = api.get("/api/v1/users/alice/export/")
    assert again.status_code == 200 and again.json()["id"] == job["id"] and again.json()["download_url"] is None
    assert ExportJob.objects.count() == 1
    assert AuditEntry.objects.get(action="gdpr.export").actor_kind == "api_token"


@pytest.mark.parametrize("state", [JobStatus.RUNNING, JobStatus.FAILED])
def test_a_stuck_or_failed_export_is_not_reported_as_ready(api, alice, django_capture_on_commit_callbacks, state):
    with django_capture_on_commit_callbacks(execute=False):
        job_id = api.post("/api/v1/users/alice/export/").json()["id"]
    ExportJob.objects.filter(pk=job_id).update(status=state, progress=5)

    latest = api.get("/api/v1/users/alice/export/").json()

    assert (latest["id"], latest["status"], latest["download_url"]) == (job_id, state, None)
    assert ExportJob.objects.count() == 1


def test_a_finished_export_is_answered_with_its_download_link(api, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job_id = api.post("/api/v1/users/alice/export/").json()["id"]

    ready = api.get("/api/v1/users/alice/export/")
    status = api.get(f"/api/v1/exports/{job_id}/").json()
    download = api.get(ready.json()["download_url"])

    assert ready.status_code == 200 and ready.json()["id"] == job_id
    assert status["status"] == "done" and status["progress"] == 100
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))).namelist()
    assert sorted(names) == ["export.html", "export.json"]


def test_post_always_starts_a_new_export(api, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post("/api/v1/users/alice/export/").json()["id"]
        second = api.post("/api/v1/users/alice/export/").json()["id"]

    assert first != second


def test_an_unfinished_export_cannot_be_downloaded(api, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        job_id = api.post("/api/v1/users/alice/export/").json()["id"]

    response = api.get(f"/api/v1/exports/{job_id}/download/")

    assert response.status_code == 409
    assert error_of(response)["code"] == "not_ready"


def test_an_export_whose_worker_died_is_answered_as_retrying_never_as_ready(
    api, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        job_id = api.post("/api/v1/users/alice/export/").json()["id"]
    stalled = timezone.now() - timedelta(seconds=1)  # claimed at 5%, then its worker stopped renewing the lease
    ExportJob.objects.filter(pk=job_id).update(status=JobStatus.RUNNING, progress=5, attempts=1, lease_until=stalled)

    answer = api.get(f"/api/v1/exports/{job_id}/")
    download = api.get(f"/api/v1/exports/{job_id}/download/")

    assert answer.json()["status"] == "retrying" and answer.json()["download_url"] is None
    assert download.status_code == 409 and error_of(download)["code"] == "not_ready"


def test_an_expired_export_is_gone_and_a_get_reports_it_without_starting_another(
    api, alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        job_id = api.post("/api/v1/users/alice/export/").json()["id"]
    export_build(job_id=job_id)
    ExportJob.objects.filter(pk=job_id).update(status=JobStatus.EXPIRED)

    gone = api.get(f"/api/v1/exports/{job_id}/download/")
    latest = api.get("/api/v1/users/alice/export/")

    assert gone.status_code == 410 and error_of(gone)["code"] == "gone"
    assert latest.status_code == 200 and latest.json()["id"] == job_id and latest.json()["download_url"] is None
    assert ExportJob.objects.count() == 1


def test_a_done_export_past_its_expiry_has_no_download_link(api, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job_id = api.post("/api/v1/users/alice/export/").json()["id"]
    ExportJob.objects.filter(pk=job_id).update(expires_at=timezone.now() - timedelta(minutes=1))

    assert api.get("/api/v1/users/alice/export/").json()["download_url"] is None
