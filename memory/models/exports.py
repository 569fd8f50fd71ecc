"""Records behind the chat, the API and GDPR requests: replies, API tokens, idempotent requests, exports, erasures."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from memory.models.tenancy import EndUser, MemorySpace, Tenant
from memory.models.tiers import Page


class ReplyStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ChatReply(models.Model):
    """One generated reply: the message, the page it became, the memory it used, and what it cost.

    Keyed by the client's idempotency key, so a double submit returns the first reply instead of a second turn.
    A failed reply keeps the user's message (to retry) and stores no page.
    """

    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="replies")
    idempotency_key = models.CharField(max_length=100)
    status = models.CharField(max_length=7, choices=ReplyStatus.choices, default=ReplyStatus.PENDING)
    user_message = models.TextField()
    page = models.OneToOneField(Page, null=True, blank=True, on_delete=models.CASCADE, related_name="reply")
    mode = models.CharField(max_length=8, blank=True)  # "offline" or "llm"
    memory_used = models.JSONField(default=dict, blank=True)
    dropped = models.JSONField(default=list, blank=True)  # memory left out to fit the prompt's token budget
    llm_calls = models.IntegerField(default=0)
    prompt_tokens = models.IntegerField(default=0)
    completion_tokens = models.IntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "idempotency_key"], name="one_reply_per_idempotency_key"),
        ]
        indexes = [models.Index(fields=["space", "-created_at"], name="reply_space_recent")]


class ApiToken(models.Model):
    """A tenant's API token: only a hash of the secret is stored; scopes mirror the roles (read, write, govern)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=128)
    scopes = ArrayField(models.CharField(max_length=16), default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)


class IdempotentRequest(models.Model):
    """The stored answer to a POST with an Idempotency-Key, replayed when the same key comes again."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    end_user = models.ForeignKey(EndUser, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=100)
    endpoint = models.CharField(max_length=100)
    request_hash = models.CharField(max_length=64)
    status_code = models.IntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "endpoint", "key"], name="one_request_per_idempotency_key"),
        ]


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


class JobKind(models.TextChoices):
    PLACEMENT = "placement", "Page placement"  # target: a memory space with evicted pages to place
    PROMOTION = "promotion", "Promotion"  # target: a hot segment with unanalysed pages
    REDERIVE = "rederive", "Profile re-derivation"  # target: an end user whose current profile is stale


class JobLease(models.Model):
    """The durable state of one background memory job, so that a dead worker loses nothing.

    A row exists while the job is due or running. `token` is empty while nobody holds it (any task may claim it);
    `lease_until` is then when the sweep queues it again (a grace for its message, or a retry's back-off), and
    while claimed the end of the worker's lease, renewed as it works. `rerun` asks the holder to run once more.
    """

    kind = models.CharField(max_length=10, choices=JobKind.choices)
    target_id = models.BigIntegerField()
    token = models.CharField(max_length=32, blank=True)
    lease_until = models.DateTimeField()
    attempts = models.IntegerField(default=0)
    rerun = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "target_id"], name="joblease_one_per_target")]
        indexes = [models.Index(fields=["lease_until"], name="joblease_lease_until")]


class ErasureReceipt(models.Model):
    """Proof that an end user's data was erased: who, when, on what legal basis, how much, and a hash. It stays."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="erasure_receipts")
    subject_id = models.BigIntegerField()
    subject_ref = models.CharField(max_length=64)  # sha256 of tenant + external id: provable, not readable
    actor_kind = models.CharField(max_length=10)
    actor_id = models.CharField(max_length=64)
    actor_label = models.CharField(max_length=200)
    legal_basis = models.CharField(max_length=200)
    reason = models.TextField(blank=True)
    counts = models.JSONField(default=dict)
    receipt_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
