"""GDPR access/portability exports of an end user's memory, built by a Celery task."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone

from memory.models.tenancy import EndUser, Tenant


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Ready"
    FAILED = "failed", "Failed"
    EXPIRED = "expired", "Expired"
    RETRYING = "retrying", "Retrying"  # its worker died mid-build; the sweep queued it again


class ExportJob(models.Model):
    """A GDPR access/portability export of one end user's memory, built by a Celery task."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="export_jobs")
    end_user = models.ForeignKey(EndUser, null=True, blank=True, on_delete=models.CASCADE, related_name="exports")
    requested_by = models.CharField(max_length=200)
    status = models.CharField(max_length=8, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress = models.IntegerField(default=0)  # percent
    file_path = models.CharField(max_length=500, blank=True)
    download_token = models.CharField(max_length=64, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # While queued: when the sweep queues it again if no worker took it; while running: the worker's lease,
    # renewed by each progress report. `attempts` counts claims and fences a stale worker's writes.
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.IntegerField(default=0)

    def status_at(self, now: datetime) -> str:
        """The status to show: a running job whose worker stopped renewing its lease is retrying, not running."""
        if self.status == JobStatus.RUNNING and self.lease_until is not None and self.lease_until < now:
            return JobStatus.RETRYING
        return self.status

    @property
    def live_status(self) -> JobStatus:
        """status_at(now), for templates and serializers."""
        return JobStatus(self.status_at(timezone.now()))

    def usable_at(self, now: datetime) -> bool:
        """Worth answering with: queued, retrying, running under a live lease, or done with a link still valid.

        A running job whose lease expired is stuck (its worker died): never usable, whatever its progress says.
        """
        if self.status in (JobStatus.FAILED, JobStatus.EXPIRED) or self.status_at(now) != self.status:
            return False
        return not (self.status == JobStatus.DONE and self.expires_at and self.expires_at <= now)
