"""The durable state of background memory jobs (placement, promotion, profile re-derivation)."""

from __future__ import annotations

from django.db import models


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
