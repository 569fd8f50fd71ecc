"""Personal data: each tenant's policy (what to do with each category the detector finds, and which long-term
memory needs review) and the re-scans of existing memory under it."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from memory.models.tenancy import Tenant
from memory.personal_data import CATEGORIES, DEFAULT_GOVERNMENT_ID_PATTERNS


class PersonalDataAction(models.TextChoices):
    """What happens to one category of personal data. Each is stricter than the one before and includes it."""

    KEEP = "keep", "Keep"
    MASK_CONSOLE = "mask_console", "Mask in the console"
    MASK_PROMPTS = "mask_prompts", "Mask in the console and in prompts"
    DO_NOT_STORE = "do_not_store", "Do not store"


ACTION_LEVEL = {action: level for level, action in enumerate(PersonalDataAction.values)}


class ReviewMode(models.TextChoices):
    AUTO = "auto", "Automatic: new facts and profiles are used at once"
    REVIEW_SENSITIVE = "review_sensitive", "Review those with personal data or a review keyword"
    REVIEW_ALL = "review_all", "Review every new fact and profile"


class ReviewState(models.TextChoices):
    """Where a fact or profile version stands in review: only approved ones ever reach a prompt."""

    PENDING = "pending", "Awaiting review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


def _default_patterns() -> list[str]:
    return list(DEFAULT_GOVERNMENT_ID_PATTERNS)


class PersonalDataPolicy(models.Model):
    """A tenant's personal-data policy (a tenant without a row has the defaults: keep everything, no review)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="personal_data_policy")
    email = models.CharField(max_length=12, choices=PersonalDataAction.choices, default=PersonalDataAction.KEEP)
    phone = models.CharField(max_length=12, choices=PersonalDataAction.choices, default=PersonalDataAction.KEEP)
    card = models.CharField(max_length=12, choices=PersonalDataAction.choices, default=PersonalDataAction.KEEP)
    iban = models.CharField(max_length=12, choices=PersonalDataAction.choices, default=PersonalDataAction.KEEP)
    government_id = models.CharField(max_length=12, choices=PersonalDataAction.choices, default=PersonalDataAction.KEEP)
    secret = models.CharField(max_length=12, choices=PersonalDataAction.choices, default=PersonalDataAction.KEEP)
    phone_region = models.CharField(max_length=2, default="GB")  # where a number without +country is dialled
    government_id_patterns = ArrayField(models.CharField(max_length=300), default=_default_patterns, blank=True)
    review_mode = models.CharField(max_length=16, choices=ReviewMode.choices, default=ReviewMode.AUTO)
    review_keywords = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(**{f"{category}__in": PersonalDataAction.values for category in CATEGORIES}),
                name="personal_data_actions_known",
            ),
            models.CheckConstraint(
                condition=models.Q(review_mode__in=ReviewMode.values), name="personal_data_review_mode_known"
            ),
        ]

    def action_for(self, category: str) -> str:
        return getattr(self, category)

    def categories_at_least(self, action: str) -> frozenset[str]:
        """The categories whose action is `action` or stricter."""
        level = ACTION_LEVEL[action]
        return frozenset(c for c in CATEGORIES if ACTION_LEVEL[self.action_for(c)] >= level)


class ScanStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class PersonalDataScan(models.Model):
    """One re-scan of a tenant's stored memory under its policy: progress, and what it redacted."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="personal_data_scans")
    status = models.CharField(max_length=8, choices=ScanStatus.choices, default=ScanStatus.QUEUED)
    requested_by = models.CharField(max_length=150, blank=True)
    total = models.IntegerField(default=0)  # rows to look at (pages, segments, facts, profile versions, replies)
    scanned = models.IntegerField(default=0)
    redacted = models.IntegerField(default=0)  # rows whose text changed
    found = models.JSONField(default=dict, blank=True)  # category -> values redacted
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    progressed_at = models.DateTimeField(null=True, blank=True)  # the last batch done: a scan silent too long died
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"], name="pd_scan_tenant_recent")]

    @property
    def percent(self) -> int:
        return 100 if not self.total else min(100, round(100 * self.scanned / self.total))
