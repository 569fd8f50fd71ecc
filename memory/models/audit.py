"""The audit trail: append-only and tamper-evident (a hash chain per tenant, guarded by a database trigger)."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import EndUser, Tenant


class ActorKind(models.TextChoices):
    OPERATOR = "operator", "Operator"
    END_USER = "end_user", "End user"
    SYSTEM = "system", "System task"
    API_TOKEN = "api_token", "API token"


class AuditEntry(models.Model):
    """Who did or read what to whose memory, when and why.

    `hash` is an HMAC (keyed with MEMORY_AUDIT_KEY, which the database does not hold) of the entry's metadata,
    `content_digest` (a digest of reason, before, after, detail and the actor's label) and the previous entry's
    hash. Erasure empties the content of entries about an erased user but keeps the digests, so the chain still
    verifies and the tombstone says who, when and what kind of thing; `tombstone_mac` (HMAC too) covers what a
    tombstone kept, so only the tombstoning service can make one and nothing left in it can be rewritten.
    """

    # No index of its own: audit_seq_per_tenant (tenant, seq) leads with it, as the other three do (migration 0036)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="audit_entries", db_index=False)
    seq = models.BigIntegerField()
    created_at = models.DateTimeField()
    actor_kind = models.CharField(max_length=10, choices=ActorKind.choices)
    actor_id = models.CharField(max_length=64, blank=True)
    action = models.CharField(max_length=40)
    end_user = models.ForeignKey(EndUser, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    subject_id = models.BigIntegerField(null=True, blank=True)  # the end user's id, kept after erasure
    target_type = models.CharField(max_length=20, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    actor_label = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    erased = models.BooleanField(default=False)
    content_digest = models.CharField(max_length=64)
    tombstone_mac = models.CharField(max_length=64, blank=True)  # "" while the entry is live
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="audit_seq_per_tenant")]
        indexes = [
            models.Index(fields=["tenant", "subject_id", "-seq"], name="audit_tenant_subject"),
            models.Index(fields=["tenant", "action", "-seq"], name="audit_tenant_action"),
        ]
