"""Retention: how long each tier of memory is kept, the runs that enforce it, legal holds that suspend it, and the
anchor that keeps a pruned audit chain verifiable."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from memory.models.erasure_receipts import ErasureReceipt
from memory.models.tenancy import Assistant, EndUser, Tenant

# The tiers a policy limits, in the order a run removes them (erasures of inactive users first, the audit last).
RETENTION_TIERS = ("inactive_users", "pages", "knowledge", "profile_versions", "chat_replies", "audit_entries")
ASSISTANT_TIERS = ("pages", "knowledge", "chat_replies")  # what an assistant's own policy may override


class RetentionPolicy(models.Model):
    """Maximum age per tier for a tenant, or for one of its assistants (overriding the tenant's where set).

    An empty limit keeps that tier for ever. Ages are in days except the inactivity rule, in months.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="retention_policies")
    assistant = models.ForeignKey(
        Assistant, null=True, blank=True, on_delete=models.CASCADE, related_name="retention_policies"
    )
    pages_max_days = models.PositiveIntegerField(null=True, blank=True)
    knowledge_max_days = models.PositiveIntegerField(null=True, blank=True)
    profile_versions_max_days = models.PositiveIntegerField(null=True, blank=True)
    chat_replies_max_days = models.PositiveIntegerField(null=True, blank=True)
    audit_entries_max_days = models.PositiveIntegerField(null=True, blank=True)
    inactive_users_max_months = models.PositiveIntegerField(null=True, blank=True)
    updated_by_label = models.CharField(max_length=200, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant"], condition=Q(assistant__isnull=True), name="one_retention_policy_per_tenant"
            ),
            models.UniqueConstraint(
                fields=["tenant", "assistant"],
                condition=Q(assistant__isnull=False),
                name="one_retention_policy_per_assistant",
            ),
            models.CheckConstraint(
                condition=Q(assistant__isnull=True)
                | Q(
                    profile_versions_max_days__isnull=True,
                    audit_entries_max_days__isnull=True,
                    inactive_users_max_months__isnull=True,
                ),
                name="assistant_retention_limits_only_its_own_tiers",
            ),
        ]


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class RetentionRun(models.Model):
    """One batch of a tenant's retention: when, who started it, what it removed per tier, its erasure receipts.

    `removed` counts the planned items gone per tier; `skipped` those a legal hold placed since planning kept;
    `more` says the batch was full (the next run goes on). `day` is set for beat's daily runs, so a redelivered
    task does the day's work once.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="retention_runs")
    trigger = models.CharField(max_length=16)  # beat, command, console
    day = models.DateField(null=True, blank=True)
    status = models.CharField(max_length=7, choices=RunStatus.choices, default=RunStatus.RUNNING)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    planned = models.JSONField(default=dict, blank=True)
    removed = models.JSONField(default=dict, blank=True)
    skipped = models.JSONField(default=dict, blank=True)
    derived = models.JSONField(default=dict, blank=True)  # what forgetting removed or re-derived along with them
    more = models.BooleanField(default=False)
    receipts = models.ManyToManyField(ErasureReceipt, blank=True, related_name="retention_runs")
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant"], condition=Q(status="running"), name="one_running_retention_run_per_tenant"
            ),
        ]
        indexes = [models.Index(fields=["tenant", "-started_at"], name="retention_run_recent")]


class LegalHold(models.Model):
    """A legal hold on an end user: while it is active (not released) nothing about them is forgotten or erased."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="legal_holds")
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="legal_holds")
    reason = models.TextField()
    placed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    placed_by_label = models.CharField(max_length=200)
    placed_at = models.DateTimeField()
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    released_by_label = models.CharField(max_length=200, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    release_reason = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["end_user"], condition=Q(released_at__isnull=True), name="one_active_legal_hold_per_user"
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="legal_hold_has_a_reason"),
        ]
        indexes = [models.Index(fields=["tenant", "-placed_at"], name="legal_hold_recent")]


class AuditAnchor(models.Model):
    """Where a tenant's audit chain starts after retention removed its oldest entries: the last removed entry's
    sequence number and hash. Verification starts from it instead of the genesis hash."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="audit_anchor")
    seq = models.BigIntegerField()
    hash = models.CharField(max_length=64)
    removed = models.BigIntegerField(default=0)  # entries removed so far, in all runs
    updated_at = models.DateTimeField(auto_now=True)
