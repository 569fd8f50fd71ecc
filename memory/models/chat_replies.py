"""Generated chat replies: the message, the page it became, the memory it used and what it cost."""

from __future__ import annotations

from django.db import models

from memory.models.tenancy import MemorySpace
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

    # No index of its own: one_reply_per_idempotency_key and reply_space_recent lead with it (migration 0036)
    space = models.ForeignKey(MemorySpace, on_delete=models.CASCADE, related_name="replies", db_index=False)
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
