"""GDPR export bundles: a zip with export.json (everything held about an end user) and a readable export.html.

A data-protection officer requests an export; `export_build_task` builds it in the background, updating the job's
progress as it goes; the bundle can be downloaded with the job's token until it expires (EXPORT_LINK_TTL_HOURS),
after which the file is deleted and the link answers 410 Gone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import zipfile
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.template import Context, Engine
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.models import EndUser, ExportJob, JobStatus
from memory.selectors.gdpr import user_export_data
from memory.services.audit import Actor, audit_record
from memory.services.jobs import lease_end, lease_kept
from memory.services.turns import end_user_write_lock
from memory.services.webhook_events import webhook_event_emit

log = logging.getLogger(__name__)


class ExportUnavailable(Exception):
    """The bundle cannot be downloaded: `gone` when its link expired, otherwise it is not ready (or the token is
    wrong)."""

    def __init__(self, message: str, *, gone: bool = False) -> None:
        super().__init__(message)
        self.gone = gone


@transaction.atomic
def export_request(*, end_user: EndUser, actor: Actor, request_id: str = "") -> ExportJob:
    """Queue a new export of everything held about `end_user`; the build starts after the transaction commits.

    Takes the end user's write lock, so an erasure under way either sees the job (and deletes it) or refuses it:
    raises EndUserClosed(erased=True) once the user is gone. A deactivated user may still be exported.
    """
    end_user_write_lock(end_user, inactive_ok=True)
    job = ExportJob.objects.create(
        tenant_id=end_user.tenant_id,
        end_user=end_user,
        requested_by=actor.label[:200],
        lease_until=lease_end(timezone.now()),  # the sweep queues it again if no worker has taken it by then
    )
    audit_record(
        tenant=end_user.tenant_id,
        actor=actor,
        action="gdpr.export",
        end_user=end_user,
        target_type="export_job",
        target_id=job.pk,
        detail={"what": "export requested"},
        request_id=request_id,
    )
    from memory.tasks import export_build_task

    transaction.on_commit(lambda: export_build_task.delay(job.pk))
    return job


def _export_claim(job_id: int, now: datetime) -> int | None:
    """Claim a queued or retrying job, or a running one whose worker's lease expired; returns the attempt number.

    The attempt fences every later write: a worker whose job was taken over (its lease ran out) writes nothing.
    """
    claimable = Q(status__in=(JobStatus.QUEUED, JobStatus.RETRYING)) | Q(status=JobStatus.RUNNING, lease_until__lt=now)
    claimed = (
        ExportJob.objects.filter(pk=job_id)
        .filter(claimable)
        .update(status=JobStatus.RUNNING, progress=5, attempts=F("attempts") + 1, lease_until=lease_end(now))
    )
    if not claimed:
        return None
    return ExportJob.objects.filter(pk=job_id).values_list("attempts", flat=True).first()


def _progress(job_id: int, attempt: int, percent: int | None = None) -> bool:
    """Report progress, which renews the lease (the heartbeat); False once another worker took the job over."""
    fields: dict = {"lease_until": lease_end(timezone.now())}
    if percent is not None:
        fields["progress"] = percent
    return bool(ExportJob.objects.filter(pk=job_id, status=JobStatus.RUNNING, attempts=attempt).update(**fields))


def export_build(*, job_id: int, now: datetime | None = None) -> ExportJob | None:
    """Build the bundle of one queued job: export.json + export.html in a zip under EXPORT_DIR, with its sha256.

    Idempotent: a job that is done, failed, expired, gone or running under another worker's live lease is skipped
    (returns None); a job whose worker died (its lease expired) is built again, by one worker only. A failure
    marks the job failed with the error; the DPO can request another.
    """
    attempt = _export_claim(job_id, timezone.now())
    if attempt is None:
        return None
    job = ExportJob.objects.select_related("end_user", "tenant").get(pk=job_id)
    try:
        with lease_kept(lambda: _progress(job.pk, attempt)):
            path = _export_write(job, attempt)
    except Exception as exc:  # any failure must end in a visible failed job, not a stuck one
        log.exception("export %s failed", job_id)
        ExportJob.objects.filter(pk=job.pk, attempts=attempt).update(
            status=JobStatus.FAILED, error=str(exc)[:2000], finished_at=timezone.now(), lease_until=None
        )
        return None
    if path is None:
        return None
    finished = now or timezone.now()
    recorded = ExportJob.objects.filter(
        pk=job.pk, status=JobStatus.RUNNING, attempts=attempt, end_user__isnull=False
    ).update(
        status=JobStatus.DONE,
        progress=100,
        file_path=str(path),
        sha256=_sha256(path),
        size_bytes=path.stat().st_size,
        download_token=secrets.token_urlsafe(32),
        finished_at=finished,
        expires_at=finished + timedelta(hours=settings.EXPORT_LINK_TTL_HOURS),
        lease_until=None,
    )
    if not recorded:
        # Cancelled or erased while the bundle was written: no row points at the file, so nothing would ever
        # delete it (an erasure may already have swept the folder); remove it here.
        path.unlink(missing_ok=True)
        return None
    user = job.end_user.external_id if job.end_user else ""
    job.refresh_from_db()
    expires = job.expires_at.isoformat() if job.expires_at else None
    data = {"user": user, "export_id": job.pk, "expires_at": expires}
    webhook_event_emit(tenant_id=job.tenant_id, type="export.ready", data=data, subject_id=job.end_user_id)
    return job


def _still_wanted(job_id: int) -> bool:
    """Whether the job is still running (an erasure cancels it, then deletes it) for an end user who still exists."""
    return ExportJob.objects.filter(pk=job_id, status=JobStatus.RUNNING, end_user__isnull=False).exists()


def _export_write(job: ExportJob, attempt: int) -> Path | None:
    """Gather, render and write the bundle, reporting progress; None when another worker took the job over, or the
    job was cancelled (the user is being erased) or is gone: then nothing is written."""
    if job.end_user is None:
        raise ValueError("the end user of this export no longer exists")
    data = user_export_data(end_user=job.end_user)
    _progress(job.pk, attempt, 40)
    summary = export_summary_html(data)
    if not _progress(job.pk, attempt, 70):
        return None  # cancelled (the user is being erased), gone, or taken over: write nothing
    path = _bundle_write(job, data, summary, attempt)
    if path is None or _progress(job.pk, attempt, 90):
        return path
    if not _still_wanted(job.pk):
        path.unlink(missing_ok=True)  # cancelled or erased while it was written: no row will ever point at it
    return None


def _bundle_write(job: ExportJob, data: dict, summary: str, attempt: int) -> Path | None:
    """Write the zip next to its final name, then rename it, so a half-written bundle is never served.

    Each attempt writes its own partial file, and renames it only while it still holds the job. The file is created
    readable by its owner only (0600) before any content is written: it is personal data.
    """
    folder = Path(settings.EXPORT_DIR) / job.tenant.slug
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"export-{job.pk}.zip"
    partial = path.with_name(f"{path.name}.{attempt}.part")
    partial.unlink(missing_ok=True)  # O_CREAT keeps the mode of a file left behind by a dead worker
    handle = os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")
    with handle, zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("export.json", json.dumps(data, ensure_ascii=False, indent=2))
        bundle.writestr("export.html", summary)
    if not _progress(job.pk, attempt):
        partial.unlink(missing_ok=True)
        return None
    partial.replace(path)
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_file(*, job: ExportJob, token: str, now: datetime | None = None) -> Path:
    """The bundle's path, if `token` is the job's download token and the link has not expired.

    Raises ExportUnavailable(gone=True) once the link has expired, ExportUnavailable otherwise.
    """
    now = now or timezone.now()
    if not job.download_token or not secrets.compare_digest(job.download_token, token):
        raise ExportUnavailable("This download link is not valid.")
    if job.status == JobStatus.EXPIRED or (job.expires_at and job.expires_at <= now):
        raise ExportUnavailable("This export has expired and its file was deleted.", gone=True)
    path = Path(job.file_path)
    if job.status != JobStatus.DONE or not path.is_file():
        raise ExportUnavailable("This export is not ready.")
    return path


def exports_expire(*, now: datetime | None = None) -> int:
    """Delete the files of exports whose link has expired and mark them expired. Idempotent; returns how many."""
    now = now or timezone.now()
    expired = list(ExportJob.objects.filter(status=JobStatus.DONE, expires_at__lte=now).values_list("pk", "file_path"))
    for job_id, file_path in expired:
        if file_path:
            Path(file_path).unlink(missing_ok=True)
        # The token stays, so the old link keeps answering "expired" (410) rather than "no such export" (404).
        ExportJob.objects.filter(pk=job_id, status=JobStatus.DONE).update(status=JobStatus.EXPIRED)
    return len(expired)


# --- The readable summary ---------------------------------------------------------------------------------------


SUMMARY = Engine(autoescape=True).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Your data held by {{ d.end_user.tenant }}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1f2430;line-height:1.5}
table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}td,th{border:1px solid #e5e7eb;padding:.35rem .5rem;
text-align:left;vertical-align:top}th{background:#f6f7f9}.muted{color:#6b7280}pre{white-space:pre-wrap}
</style></head><body>
<h1>Everything held about {{ d.end_user.display_name|default:d.end_user.external_id }}</h1>
<p class="muted">Generated {{ d.generated_at|date:"j M Y, H:i T" }}
· tenant {{ d.end_user.tenant }} · format {{ d.format }}.
The complete, machine-readable data (embeddings included) is in <code>export.json</code> next to this file.</p>
<h2>Account</h2>
<table><tr><th>External id</th><td>{{ d.end_user.external_id }}</td></tr>
<tr><th>Name</th><td>{{ d.end_user.display_name }}</td></tr><tr><th>Email</th><td>{{ d.end_user.email }}</td></tr>
<tr><th>Created</th><td>{{ d.end_user.created_at|date:"j M Y, H:i T" }}</td></tr>
<tr><th>Last active</th><td>{{ d.end_user.last_active_at|date:"j M Y, H:i T"|default:"never" }}</td></tr></table>
<h2>Profile</h2>
{% for v in d.profile_versions %}<h3>Version {{ v.number }} <span class="muted">({{ v.author }},
{{ v.created_at|date:"j M Y, H:i T" }}
{% if v.locked %}, locked{% endif %})</span></h3><pre>{{ v.text }}</pre>{% empty %}<p>No profile.</p>{% endfor %}
<h2>Knowledge</h2>
<table><tr><th>Kind</th><th>Fact</th><th>Pinned</th><th>Locked</th><th>Created</th></tr>
{% for k in d.knowledge %}<tr><td>{{ k.kind }}</td><td>{{ k.text }}</td><td>{{ k.pinned|yesno }}</td>
<td>{{ k.locked|yesno }}</td><td>{{ k.created_at|date:"j M Y, H:i T" }}</td></tr>
{% empty %}<tr><td colspan="5">No knowledge.</td></tr>{% endfor %}</table>
{% for m in d.memory %}<h2>Memory with {{ m.assistant.name }}</h2>
<p>{{ m.pages|length }} pages, {{ m.segments|length }} topic segments, {{ m.replies|length }} chat replies.
{% if m.memory_paused %}Memory is paused.{% endif %}</p>
<h3>Topic segments</h3><table><tr><th>Summary</th><th>Keywords</th><th>Visits</th><th>Pinned</th></tr>
{% for s in m.segments %}<tr><td>{{ s.summary }}</td><td>{{ s.keywords|join:", " }}</td><td>{{ s.n_visit }}</td>
<td>{{ s.pinned|yesno }}</td></tr>{% empty %}<tr><td colspan="4">None.</td></tr>{% endfor %}</table>
<h3>Conversation</h3><table><tr><th>When</th><th>You wrote</th><th>The assistant replied</th></tr>
{% for p in m.pages %}<tr><td>{{ p.at|date:"j M Y, H:i T" }}</td>
<td>{{ p.user_message }}</td><td>{{ p.assistant_reply }}</td></tr>
{% empty %}<tr><td colspan="3">No conversation.</td></tr>{% endfor %}</table>{% endfor %}
<h2>Record of actions on your data</h2>
<table><tr><th>When</th><th>Who</th><th>Action</th><th>Reason</th></tr>
{% for a in d.audit %}<tr><td>{{ a.at|date:"j M Y, H:i T" }}</td>
<td>{{ a.actor }}{% if a.actor_label %} ({{ a.actor_label }}){% endif %}
</td><td>{{ a.action }}</td><td>{{ a.reason }}</td></tr>{% empty %}<tr><td colspan="4">None.</td></tr>{% endfor %}
</table></body></html>
"""
)


def _dates_parsed(value: object, key: str = "") -> object:
    """`value` with every ISO timestamp under a key named `at` or `*_at` parsed back to a datetime, for display."""
    if isinstance(value, dict):
        return {k: _dates_parsed(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_parsed(item, key) for item in value]
    if isinstance(value, str) and (key == "at" or key.endswith("_at")):
        return parse_datetime(value) or value
    return value


def export_summary_html(data: dict) -> str:
    """A readable HTML summary of user_export_data's result (every value escaped, dates written for people)."""
    return SUMMARY.render(Context({"d": _dates_parsed(data)}))
