"""A tenant's webhook endpoints: created with a secret shown once, changed, given a new secret, tested, deleted.

Every change is audited on the tenant (`webhook.create`, `.update`, `.rotate_secret`, `.delete`, `.test`); the
secret never goes into the audit log. Who may call these is checked by the callers (memory.roles: manage in the
console, the govern scope in the API).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from memory.models import Tenant
from memory.models.webhooks import DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent
from memory.services.audit import Actor, audit_record
from memory.services.webhook_delivery import WebhookError
from memory.services.webhook_events import deliveries_queue
from memory.webhook_transport import UrlRefused, url_check
from memory.webhooks import EVENT_TYPES, TEST_EVENT, event_id_generate, secret_generate

MAX_ENDPOINTS = 20  # per tenant
MAX_DESCRIPTION = 200


@dataclass(frozen=True)
class EndpointSecret:
    """An endpoint and the one copy of its secret that is ever shown (at creation and at rotation)."""

    endpoint: WebhookEndpoint
    secret: str


def _url(url: str) -> str:
    try:
        url = url_check(url)
    except UrlRefused as exc:
        raise WebhookError(str(exc)) from None
    if len(url) > 500:
        raise WebhookError("the URL is longer than 500 characters")
    return url


def _event_types(types) -> list[str]:
    wanted = {str(t).strip() for t in types or () if str(t).strip()}
    unknown = sorted(wanted - set(EVENT_TYPES))
    if unknown:
        raise WebhookError(f"unknown event type {', '.join(unknown)}")
    if not wanted:
        raise WebhookError("choose at least one event type")
    return [t for t in EVENT_TYPES if t in wanted]


def _audit(endpoint: WebhookEndpoint, action: str, actor: Actor, request_id: str, before=None, after=None, **detail):
    audit_record(
        tenant=endpoint.tenant_id, actor=actor, action=action, target_type="webhook_endpoint",
        target_id=endpoint.pk, before=before, after=after, detail={"url": endpoint.url, **detail},
        request_id=request_id,
    )  # fmt: skip


@transaction.atomic
def webhook_endpoint_create(
    *,
    tenant: Tenant,
    url: str,
    event_types: list[str],
    actor: Actor,
    description: str = "",
    enabled: bool = True,
    created_by=None,
    request_id: str = "",
) -> EndpointSecret:
    """A new endpoint of `tenant` with a new secret (returned once; kept to sign, never shown again); audited.

    Raises WebhookError for a URL that may not be called (memory.webhook_transport), an unknown event type, or a
    tenant that has MAX_ENDPOINTS already."""
    url, types = _url(url), _event_types(event_types)
    if WebhookEndpoint.objects.filter(tenant=tenant).count() >= MAX_ENDPOINTS:
        raise WebhookError(f"a tenant has at most {MAX_ENDPOINTS} endpoints")
    secret = secret_generate()
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant, url=url, event_types=types, secret=secret, enabled=enabled, created_by=created_by,
        description=(description or "").strip()[:MAX_DESCRIPTION],
    )  # fmt: skip
    _audit(endpoint, "webhook.create", actor, request_id, event_types=types, enabled=enabled)
    return EndpointSecret(endpoint=endpoint, secret=secret)


@transaction.atomic
def webhook_endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    actor: Actor,
    url: str | None = None,
    event_types: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
    request_id: str = "",
) -> WebhookEndpoint:
    """Change what is given (None: unchanged); audited with what changed. Disabling it cancels its deliveries not
    sent yet. Returns the endpoint; nothing is audited when nothing changed."""
    wanted = {
        "url": None if url is None else _url(url),
        "event_types": None if event_types is None else _event_types(event_types),
        "description": None if description is None else description.strip()[:MAX_DESCRIPTION],
        "enabled": enabled,
    }
    changed = {
        field: value for field, value in wanted.items() if value is not None and getattr(endpoint, field) != value
    }
    if not changed:
        return endpoint
    before = {field: getattr(endpoint, field) for field in changed}
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(**changed)
    for field, value in changed.items():
        setattr(endpoint, field, value)
    if changed.get("enabled") is False:
        endpoint.deliveries.filter(status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.CANCELLED, next_attempt_at=None
        )
    _audit(endpoint, "webhook.update", actor, request_id, before=before, after=changed)
    return endpoint


@transaction.atomic
def webhook_endpoint_secret_rotate(*, endpoint: WebhookEndpoint, actor: Actor, request_id: str = "") -> EndpointSecret:
    """A new secret for the endpoint, at once (the old one no longer signs anything); returned once; audited."""
    secret, now = secret_generate(), timezone.now()
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(secret=secret, secret_rotated_at=now)
    endpoint.secret, endpoint.secret_rotated_at = secret, now
    _audit(endpoint, "webhook.rotate_secret", actor, request_id)
    return EndpointSecret(endpoint=endpoint, secret=secret)


@transaction.atomic
def webhook_endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor, request_id: str = "") -> None:
    """Delete the endpoint with its delivery log (the events stay for other endpoints); audited."""
    _audit(endpoint, "webhook.delete", actor, request_id, event_types=endpoint.event_types)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()


@transaction.atomic
def webhook_endpoint_test(*, endpoint: WebhookEndpoint, actor: Actor, request_id: str = "") -> WebhookDelivery:
    """Send a `webhook.test` event to this endpoint (whatever it subscribes to), queued after commit; audited.

    Refused (WebhookError) for a disabled endpoint."""
    if not endpoint.enabled:
        raise WebhookError("the endpoint is disabled: enable it first")
    now = timezone.now()
    public_id = event_id_generate()
    payload = {
        "id": public_id, "type": TEST_EVENT, "created_at": now.isoformat(), "tenant": endpoint.tenant.slug,
        "data": {"endpoint_id": endpoint.pk},
    }  # fmt: skip
    event = WebhookEvent.objects.create(
        tenant_id=endpoint.tenant_id, public_id=public_id, type=TEST_EVENT, payload=payload, created_at=now
    )
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, event=event, next_attempt_at=now)
    _audit(endpoint, "webhook.test", actor, request_id, event=public_id)
    transaction.on_commit(lambda: deliveries_queue([delivery.pk]))
    return delivery
