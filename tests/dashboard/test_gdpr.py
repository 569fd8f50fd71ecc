"""GDPR screens for dpo and admin: export with progress and an expiring download, erasure after a dry run, receipts."""

from __future__ import annotations

import hashlib
import io
import json
import re
import stat
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from memory.models import AuditEntry, EndUser, ErasureReceipt, ExportJob, JobStatus
from memory.selectors.gdpr import KEPT_TOMBSTONES, erased_total
from memory.services import gdpr_export
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.gdpr_export import export_build, export_request, exports_expire
from memory.services.turns import EndUserClosed
from memory.tasks import export_build_task
from tests import builders
from tests.dashboard.conftest import HX


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return settings.EXPORT_DIR


def _export(client, alice, capture) -> ExportJob:
    with capture(execute=True):
        response = client.post(f"/console/acme/users/{alice.pk}/export/")
    job = ExportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/console/acme/exports/{job.pk}/"
    return job


def test_a_dpo_exports_a_user_and_downloads_the_bundle(
    client, dpo_user, alice, alice_space, django_capture_on_commit_callbacks
):
    client.force_login(dpo_user)

    job = _export(client, alice, django_capture_on_commit_callbacks)

    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.progress == 100 and job.requested_by == "dpo-of-acme"
    assert job.expires_at - job.finished_at == timedelta(hours=24)
    response = client.get(f"/console/acme/exports/{job.pk}/download/{job.download_token}/")
    content = b"".join(response.streaming_content)
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    assert hashlib.sha256(content).hexdigest() == job.sha256 and len(content) == job.size_bytes
    bundle = zipfile.ZipFile(io.BytesIO(content))
    data = json.loads(bundle.read("export.json"))
    assert data["end_user"]["external_id"] == "alice" and len(data["memory"][0]["pages"]) == 12
    assert "Everything held about Alice" in bundle.read("export.html").decode()
    actions = list(AuditEntry.objects.order_by("seq").values_list("action", flat=True))
    assert actions == ["gdpr.export", "memory.read"]


def test_the_job_page_polls_while_running_and_stops_when_done(client, dpo_user, alice, alice_space):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))  # on-commit never runs: it stays queued
    client.force_login(dpo_user)
    url = f"/console/acme/exports/{job.pk}/"

    queued = client.get(url, **HX).content.decode()
    full = client.get(url).content.decode()
    export_build(job_id=job.pk)
    done = client.get(url, **HX).content.decode()

    assert (
        queued.lstrip().startswith('<section class="section" id="export-status"') and 'hx-trigger="every 1s"' in queued
    )
    assert "<html" in full and "<progress" in full and "<html" not in queued
    assert "hx-trigger" not in done and "Download the export" in done


def test_an_export_whose_worker_died_shows_retrying_and_keeps_polling(client, dpo_user, alice, alice_space):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))
    stalled = timezone.now() - timedelta(seconds=1)  # claimed at 5%, then its worker stopped renewing the lease
    ExportJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, progress=5, attempts=1, lease_until=stalled)
    client.force_login(dpo_user)

    page = client.get(f"/console/acme/exports/{job.pk}/", **HX).content.decode()
    listing = client.get(f"/console/acme/users/{alice.pk}/gdpr/").content.decode()

    assert "Retrying" in page and 'hx-trigger="every 1s"' in page and "Download the export" not in page
    assert "Retrying" in listing and "Running" not in listing


def test_the_build_task_is_idempotent(alice, alice_space, dpo_user, export_dir):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))

    export_build_task.delay(job.pk)
    job.refresh_from_db()
    first = (job.sha256, job.download_token, job.finished_at)
    export_build_task.delay(job.pk)
    job.refresh_from_db()

    assert (job.sha256, job.download_token, job.finished_at) == first
    assert [p.name for p in (export_dir / "acme").iterdir()] == [f"export-{job.pk}.zip"]


def test_a_failed_build_is_marked_failed_with_its_error(alice, dpo_user, monkeypatch):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))

    def broken(**kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("memory.services.gdpr_export.user_export_data", broken)
    export_build(job_id=job.pk)
    job.refresh_from_db()

    assert job.status == JobStatus.FAILED and "disk full" in job.error
    assert export_build(job_id=job.pk) is None  # a failed job is not retried by a redelivered task


def test_an_expired_link_answers_410_and_the_sweep_deletes_the_file(client, dpo_user, alice, alice_space):
    job = export_build(job_id=export_request(end_user=alice, actor=Actor.operator(dpo_user)).pk)
    url = f"/console/acme/exports/{job.pk}/download/{job.download_token}/"
    client.force_login(dpo_user)

    later = timezone.now() + timedelta(hours=25)
    ExportJob.objects.filter(pk=job.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    gone = client.get(url)
    assert gone.status_code == 410 and "This export has expired" in gone.content.decode()

    assert exports_expire(now=later) == 1
    job.refresh_from_db()
    assert job.status == JobStatus.EXPIRED and not Path(job.file_path).exists()
    assert client.get(url).status_code == 410
    assert exports_expire(now=later) == 0


def test_a_wrong_token_or_unfinished_export_is_404(client, dpo_user, alice, alice_space):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))
    client.force_login(dpo_user)

    assert client.get(f"/console/acme/exports/{job.pk}/download/anything/").status_code == 404
    export_build(job_id=job.pk)
    assert client.get(f"/console/acme/exports/{job.pk}/download/not-the-token/").status_code == 404


def test_the_erasure_page_shows_a_dry_run_first_and_deletes_nothing(client, dpo_user, alice, alice_space):
    client.force_login(dpo_user)

    response = client.get(f"/console/acme/users/{alice.pk}/erase/")

    counts = response.context["counts"]
    assert counts["memory_page"] == 12 and counts["memory_segment"] == 4 and counts["memory_enduser"] == 1
    assert "Dry run" in response.content.decode() and "Pages (turns)" in response.content.decode()
    assert EndUser.objects.filter(pk=alice.pk).exists()


def test_erasure_needs_a_legal_basis_and_the_external_id_typed_in(client, admin_user, alice, alice_space):
    client.force_login(admin_user)
    url = f"/console/acme/users/{alice.pk}/erase/"

    missing = client.post(url, {"legal_basis": "", "confirm": "alice"})
    wrong = client.post(url, {"legal_basis": "Art. 17", "confirm": "bob"}, **HX)

    assert missing.status_code == 200 and "This field is required" in missing.content.decode()
    assert wrong.content.decode().lstrip().startswith('<section class="section danger-zone" id="confirm">')
    assert "Type alice exactly" in wrong.content.decode()
    assert EndUser.objects.filter(pk=alice.pk).exists()


def test_erasing_ends_with_a_receipt_that_stays_listed(client, dpo_user, alice, alice_space):
    client.force_login(dpo_user)

    response = client.post(
        f"/console/acme/users/{alice.pk}/erase/",
        {"legal_basis": "GDPR Art. 17(1)(b): consent withdrawn", "reason": "ticket 42", "confirm": "alice"},
    )

    receipt = ErasureReceipt.objects.get()
    assert response["Location"] == f"/console/acme/receipts/{receipt.pk}/"
    assert not EndUser.objects.filter(pk=alice.pk).exists()
    body = client.get(response["Location"]).content.decode()
    assert "hash verifies" in body and "consent withdrawn" in body and "Pages (turns)" in body
    listing = client.get("/console/acme/gdpr/").content.decode()
    assert f"/console/acme/receipts/{receipt.pk}/" in listing and "dpo-of-acme" in listing


def test_the_receipt_does_not_count_the_kept_audit_tombstones_among_the_rows_erased(
    client, dpo_user, alice, alice_space
):
    client.force_login(dpo_user)
    client.get(f"/console/acme/users/{alice.pk}/")  # reading her memory is audited: an entry about her to keep
    client.post(
        f"/console/acme/users/{alice.pk}/erase/",
        {"legal_basis": "GDPR Art. 17(1)(b): consent withdrawn", "confirm": "alice"},
    )

    receipt = ErasureReceipt.objects.get()
    kept = receipt.counts[KEPT_TOMBSTONES]
    deleted = sum(n for table, n in receipt.counts.items() if table != KEPT_TOMBSTONES)
    assert kept > 0 and erased_total(receipt.counts) == deleted
    body = client.get(f"/console/acme/receipts/{receipt.pk}/").content.decode()
    assert f"{deleted} rows erased" in body and f"{kept} audit entr" in body and "kept as tombstone" in body
    listing = client.get("/console/acme/gdpr/").content.decode()
    assert f'<td class="num">{deleted}</td>' in listing


@pytest.mark.parametrize("role_user", ["agent_user", "supervisor_user"])
def test_gdpr_screens_need_govern(client, request, alice, role_user):
    client.force_login(request.getfixturevalue(role_user))

    for url in (
        f"/console/acme/users/{alice.pk}/gdpr/",
        f"/console/acme/users/{alice.pk}/erase/",
        "/console/acme/gdpr/",
    ):
        assert client.get(url).status_code == 403
    assert client.post(f"/console/acme/users/{alice.pk}/export/").status_code == 403
    assert (
        client.post(f"/console/acme/users/{alice.pk}/erase/", {"legal_basis": "x", "confirm": "alice"}).status_code
        == 403
    )
    assert not ExportJob.objects.exists() and EndUser.objects.filter(pk=alice.pk).exists()


def test_another_tenants_users_exports_and_receipts_are_404(client, dpo_user, stranger, other_operator):
    job = export_request(end_user=stranger, actor=Actor.operator(other_operator))
    export_build(job_id=job.pk)
    client.force_login(other_operator)
    client.post(f"/console/globex/users/{stranger.pk}/erase/", {"legal_basis": "x", "confirm": "stranger"})
    receipt = ErasureReceipt.objects.get()
    client.force_login(dpo_user)

    assert client.get(f"/console/acme/users/{stranger.pk}/gdpr/").status_code == 404
    assert client.post(f"/console/acme/users/{stranger.pk}/export/").status_code == 404
    assert client.get(f"/console/acme/exports/{job.pk}/").status_code == 404
    assert client.get(f"/console/acme/receipts/{receipt.pk}/").status_code == 404


def test_the_user_gdpr_page_lists_the_users_exports(client, dpo_user, alice, alice_space):
    export_build(job_id=export_request(end_user=alice, actor=Actor.operator(dpo_user)).pk)
    client.force_login(dpo_user)

    body = client.get(f"/console/acme/users/{alice.pk}/gdpr/").content.decode()

    assert "Prepare an export" in body and "Ready" in body and "Review erasure" in body


def test_the_readable_summary_escapes_what_users_wrote(settings, alice, dpo_user):
    from memory.selectors.gdpr import user_export_data
    from memory.services.gdpr_export import export_summary_html

    builders.page(builders.space_of(alice), user_message="<script>x()</script>", assistant_reply="ok")

    html = export_summary_html(user_export_data(end_user=alice))

    assert "<script>x()" not in html and "&lt;script&gt;x()" in html


def test_the_readable_summary_writes_dates_for_people_not_iso_timestamps(alice, dpo_user):
    from memory.selectors.gdpr import user_export_data
    from memory.services.gdpr_export import export_summary_html

    page = builders.page(builders.space_of(alice), user_message="Hello", assistant_reply="Hi")
    data = user_export_data(end_user=alice)

    html = export_summary_html(data)

    assert page.at.strftime("%-d %b %Y, %H:%M UTC") in html
    assert data["generated_at"] not in html and page.at.isoformat() not in html
    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:", html)


def test_the_link_lives_as_long_as_the_setting_says(settings, alice, dpo_user):
    settings.EXPORT_LINK_TTL_HOURS = 2
    job = export_build(job_id=export_request(end_user=alice, actor=Actor.operator(dpo_user)).pk)

    assert job.expires_at - job.finished_at == timedelta(hours=2)


def test_export_files_are_readable_by_their_owner_only(alice, alice_space, dpo_user, export_dir):
    job = export_build(job_id=export_request(end_user=alice, actor=Actor.operator(dpo_user)).pk)

    assert stat.S_IMODE(Path(job.file_path).stat().st_mode) == 0o600


def test_an_erasure_during_a_running_export_leaves_no_file(alice, alice_space, dpo_user, export_dir, monkeypatch):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))
    summary = gdpr_export.export_summary_html

    def erase_meanwhile(data: dict) -> str:
        user_erase(end_user=alice, actor=Actor.operator(dpo_user), legal_basis="GDPR Art. 17", dry_run=False)
        return summary(data)

    monkeypatch.setattr("memory.services.gdpr_export.export_summary_html", erase_meanwhile)

    assert export_build(job_id=job.pk) is None
    assert not ExportJob.objects.exists() and list(export_dir.rglob("*.zip*")) == []


def test_a_bundle_written_just_before_the_erasure_lands_is_removed(
    alice, alice_space, dpo_user, export_dir, monkeypatch
):
    job = export_request(end_user=alice, actor=Actor.operator(dpo_user))
    write = gdpr_export._bundle_write

    def write_then_erase(*args) -> Path:
        path = write(*args)
        user_erase(end_user=alice, actor=Actor.operator(dpo_user), legal_basis="GDPR Art. 17", dry_run=False)
        return path

    monkeypatch.setattr("memory.services.gdpr_export._bundle_write", write_then_erase)

    assert export_build(job_id=job.pk) is None
    assert list(export_dir.rglob("*.zip*")) == []


def test_the_erasure_deletes_the_files_of_finished_exports(
    alice, alice_space, dpo_user, export_dir, django_capture_on_commit_callbacks
):
    export_build(job_id=export_request(end_user=alice, actor=Actor.operator(dpo_user)).pk)

    with django_capture_on_commit_callbacks(execute=True):
        user_erase(end_user=alice, actor=Actor.operator(dpo_user), legal_basis="GDPR Art. 17", dry_run=False)

    assert list(export_dir.rglob("*.zip*")) == []


def test_an_export_of_an_erased_user_is_refused_in_words(client, dpo_user, alice, alice_space, monkeypatch):
    def erased(**kwargs):
        raise EndUserClosed(erased=True)

    monkeypatch.setattr("dashboard.views.gdpr.export_request", erased)
    client.force_login(dpo_user)

    response = client.post(f"/console/acme/users/{alice.pk}/export/", follow=True)

    assert response.status_code == 200 and "has just been erased" in response.content.decode()
