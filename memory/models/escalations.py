"""Escalations: an agent (read-only role) asks a supervisor to act on one memory item, with a note."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from memory.models.tenancy import EndUser, Tenant


class EscalationState(models.TextChoices):
    OPEN = "open", "Waiting for a supervisor"
    RESOLVED = "resolved", "Resolved"
    DISMISSED = "dismissed", "Dismissed"


class Escalation(models.Model):
    """One item flagged for a supervisor: who flagged it and why, and how a supervisor settled it.

    The item is named by kind and id (memory.items), as audit entries name it; an item forgotten meanwhile leaves
    the escalation readable, its target gone.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="escalations")
    # ON DELETE CASCADE in the database (migration 0028): erasing a user takes their escalations with no query more
    end_user = models.ForeignKey(EndUser, on_delete=models.DO_NOTHING, db_constraint=False, related_name="escalations")
    target_type = models.CharField(max_length=20)
    target_id = models.BigIntegerField()
    note = models.TextField()
    state = models.CharField(max_length=9, choices=EscalationState.choices, default=EscalationState.OPEN)
    flagged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="escalations_flagged"
    )
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="escalations_resolved"
    )
    resolution = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # the supervisor's queue: a tenant's open escalations, oldest first
            models.Index(fields=["tenant", "created_at"], condition=models.Q(state="open"), name="escalation_open"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(state="open", resolved_at__isnull=True)
                | (~models.Q(state="open") & models.Q(resolved_at__isnull=False)),
                name="escalation_resolved_when_settled",
            ),
        ]
