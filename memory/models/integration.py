"""Records behind the chat, the API and GDPR requests: replies, API tokens, idempotent requests, exports, erasures."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

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
