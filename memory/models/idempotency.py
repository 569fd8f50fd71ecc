"""Stored answers to POSTs with an Idempotency-Key, replayed when the same key comes again."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import EndUser, Tenant


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
