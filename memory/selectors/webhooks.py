"""Reads of a tenant's webhooks: its endpoints (without their secrets), and an endpoint's delivery log.

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist (another tenant's id too).
"""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from memory.models import Tenant
from memory.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookEndpoint


def webhook_endpoint_list(*, tenant: Tenant) -> QuerySet[WebhookEndpoint]:
    """The tenant's endpoints, oldest first, without their secrets."""
    return WebhookEndpoint.objects.filter(tenant=tenant).defer("secret").order_by("created_at", "id")


def webhook_endpoint_get(*, tenant: Tenant, id: int) -> WebhookEndpoint:
    """One endpoint of `tenant`, with its tenant (its secret is read: the services that sign or rotate need it)."""
    return WebhookEndpoint.objects.select_related("tenant").get(tenant=tenant, pk=id)


def webhook_delivery_list(*, endpoint: WebhookEndpoint) -> QuerySet[WebhookDelivery]:
    """The endpoint's delivery log, newest first, each with its event and its attempts in order (two queries)."""
    attempts = Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("number"))
    deliveries = WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")
    return deliveries.prefetch_related(attempts).order_by("-created_at", "-id")


def webhook_delivery_get(*, tenant: Tenant, id: int) -> WebhookDelivery:
    """One delivery to an endpoint of `tenant`, with its endpoint and event."""
    return WebhookDelivery.objects.select_related("endpoint__tenant", "event").get(endpoint__tenant=tenant, pk=id)


def webhook_endpoint_tenants(*, event_type: str) -> list[int]:
    """The tenants with an enabled endpoint that wants `event_type` (for events a periodic check emits)."""
    wanting = WebhookEndpoint.objects.filter(enabled=True, event_types__contains=[event_type])
    return list(wanting.values_list("tenant_id", flat=True).distinct())
