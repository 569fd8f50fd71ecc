"""What each updating step did, and which embedding model the stored vectors come from."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import EndUser, MemorySpace, Tenant


class EventKind(models.TextChoices):
    STM_OVERFLOW = "stm_overflow", "Short-term overflow placed a page"
    SEGMENT_CREATED = "segment_created", "Segment created"
    PROMOTION = "promotion", "Segment promoted to long-term memory"
    EVICTION = "eviction", "Segment evicted from mid-term memory"
    KNOWLEDGE_DROPPED = "knowledge_dropped", "Knowledge entry dropped (FIFO)"
    PAUSED_DROP = "paused_drop", "Page dropped while memory was paused"
    HOLD_KEPT = "hold_kept", "Deletion deferred: the end user is under legal hold"


class EventStatus(models.TextChoices):
    OK = "ok", "Done"
    FAILED = "failed", "Failed (retryable)"


class MemoryEvent(models.Model):
    """One updating step: what it did, with which inputs, how many LLM calls and tokens it used."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memory_events")
    end_user = models.ForeignKey(EndUser, null=True, on_delete=models.CASCADE, related_name="memory_events")
    space = models.ForeignKey(MemorySpace, null=True, on_delete=models.CASCADE, related_name="memory_events")
    kind = models.CharField(max_length=20, choices=EventKind.choices)
    status = models.CharField(max_length=6, choices=EventStatus.choices, default=EventStatus.OK)
    mode = models.CharField(max_length=8, blank=True)  # "offline" or "llm"
    target_type = models.CharField(max_length=20, blank=True)
    target_id = models.BigIntegerField(null=True)
    detail = models.JSONField(default=dict, blank=True)
    llm_calls = models.IntegerField(default=0)
    prompt_tokens = models.IntegerField(default=0)
    completion_tokens = models.IntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "kind", "created_at"], name="event_tenant_kind_at"),
            models.Index(fields=["end_user", "created_at"], name="event_user_at"),
        ]


class EmbeddingState(models.Model):
    """The single row naming the model and dimension of every stored vector (memory_reembed changes it)."""

    model = models.CharField(max_length=200)
    dimension = models.IntegerField()
    updated_at = models.DateTimeField(auto_now=True)
