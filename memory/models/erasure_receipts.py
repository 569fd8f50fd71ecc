"""Receipts of erasures: proof that an end user's data was erased, kept after the data is gone."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import Tenant


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
