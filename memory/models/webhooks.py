"""Signed webhooks: a tenant's endpoints, the events memory emitted for them, and each delivery with its attempts."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from memory.models.tenancy import Tenant


class WebhookEndpoint(models.Model):
    """Where a tenant wants to hear about memory: a URL, the event types it wants, and the secret it is signed with.

    The secret is kept (every delivery is signed with it) but shown only when created or rotated.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.CharField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=100)  # whsec_<base64>, as the Standard Webhooks spec writes it
    event_types = ArrayField(models.CharField(max_length=40), default=list)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["tenant"], condition=models.Q(enabled=True), name="webhook_endpoint_enabled")]


class WebhookEvent(models.Model):
    """One thing that happened in a tenant's memory, as its endpoints receive it (`payload` is the JSON body).

    Recorded only when an enabled endpoint of the tenant wants its type. `subject_id` is the end user it is about
    (kept after erasure, as audit entries keep it); `erased` says their erasure stripped its text and it is never
    sent again. `key` makes an event that a periodic check emits (dsr.due_soon) happen once.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_events")
    public_id = models.CharField(max_length=40, unique=True)  # evt_…, the webhook-id header
    type = models.CharField(max_length=40)
    payload = models.JSONField()
    subject_id = models.BigIntegerField(null=True, blank=True)
    key = models.CharField(max_length=200, blank=True)
    erased = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "subject_id"], name="webhook_event_subject")]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "key"], condition=~models.Q(key=""), name="webhook_event_once_per_key"
            ),
        ]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"  # every retry failed: given up
    CANCELLED = "cancelled", "Cancelled"  # the endpoint was disabled or its subject erased before it went


class WebhookDelivery(models.Model):
    """One event to one endpoint: pending until a 2xx answer (delivered) or the last retry (failed).

    `failures` counts failed attempts since the last success or replay (the back-off's step); `attempts` every one.
    `lease_until` is set while a worker sends it, so that two runs of its task never send it at once.
    """

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=9, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.IntegerField(default=0)
    failures = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.IntegerField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    replay_requested = models.BooleanField(default=False)  # its next attempt is an operator's replay
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["endpoint", "event"], name="webhook_delivery_once")]
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_log"),
            models.Index(fields=["next_attempt_at"], condition=models.Q(status="pending"), name="webhook_delivery_due"),
        ]


class WebhookAttempt(models.Model):
    """One POST of a delivery: when, the answer's status code (none when no answer came), latency and error."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.IntegerField()
    at = models.DateTimeField()
    status_code = models.IntegerField(null=True, blank=True)
    latency_ms = models.IntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)
    replay = models.BooleanField(default=False)  # sent because an operator asked to replay it

    class Meta:
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_number")]

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
