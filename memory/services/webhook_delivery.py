"""Delivering webhook events: one signed POST per attempt, retried with back-off, every attempt recorded.

A delivery is sent by `webhook_deliver` (its task, `webhook_deliver_task`, is queued after the event is recorded);
a 2xx answer delivers it. Anything else (another status, a timeout, a refused address) schedules the next attempt
after the next of RETRY_DELAYS (30 s, 2 min, 10 min, 1 h, 3 h, 6 h, 12 h: about a day in all), and after the last
one it has failed for good. The beat sweep (`webhook_deliveries_requeue`, every 30 s) queues the deliveries that are
due again. A replay sends the same event (same `webhook-id`) again as a new attempt.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from memory.models.webhooks import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEvent
from memory.services.audit import Actor, audit_record
from memory.services.webhook_events import USER_ERASED, data_stripped, deliveries_queue
from memory.webhook_transport import PostResult, webhook_post
from memory.webhooks import body_of, headers_for

RETRY_DELAYS = (
    timedelta(seconds=30),
    timedelta(minutes=2),
    timedelta(minutes=10),
    timedelta(hours=1),
    timedelta(hours=3),
    timedelta(hours=6),
    timedelta(hours=12),
)
REQUEUE_BATCH = 500


class WebhookError(ValueError):
    """The webhook change or replay is refused; the message says why."""


def _lease() -> timedelta:
    """How long a worker holds a delivery while it sends: longer than the POST can take."""
    return timedelta(seconds=2 * settings.WEBHOOK_TIMEOUT_SECONDS + 10)


def _unleased(now: datetime) -> Q:
    return Q(lease_until__isnull=True) | Q(lease_until__lt=now)


def webhook_deliver(*, delivery_id: int, now: datetime | None = None) -> WebhookAttempt | None:
    """Send one delivery that is pending and due, and record the attempt.

    Idempotent: a delivery that was delivered, failed for good, cancelled, is not due yet, or is being sent by
    another worker (its lease) is skipped (None); so a task run twice never sends a delivered delivery again. A
    delivery whose endpoint was disabled or whose event's subject was erased meanwhile is cancelled instead.
    """
    now = now or timezone.now()
    lease_until = now + _lease()
    due = WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
    # the claim numbers the attempt too, so that no two attempts share a number whatever happens meanwhile
    if not due.filter(_unleased(now)).update(lease_until=lease_until, attempts=F("attempts") + 1):
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint", "event").get(pk=delivery_id)
    if not delivery.endpoint.enabled or delivery.event.erased:
        WebhookDelivery.objects.filter(pk=delivery_id, lease_until=lease_until).update(
            status=DeliveryStatus.CANCELLED, next_attempt_at=None, lease_until=None
        )
        return None
    result = _post(delivery, now)
    return _attempt_record(delivery, result, now=now, lease_until=lease_until)


def _post(delivery: WebhookDelivery, now: datetime) -> PostResult:
    event, endpoint = delivery.event, delivery.endpoint
    body = body_of(event.payload)
    headers = headers_for(secret=endpoint.secret, event_id=event.public_id, timestamp=int(now.timestamp()), body=body)
    return webhook_post(url=endpoint.url, body=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS)


def _next_state(delivery: WebhookDelivery, result: PostResult, now: datetime) -> dict:
    if result.ok:
        return {"status": DeliveryStatus.DELIVERED, "delivered_at": now, "failures": 0, "next_attempt_at": None}
    if delivery.failures < len(RETRY_DELAYS):
        return {"failures": delivery.failures + 1, "next_attempt_at": now + RETRY_DELAYS[delivery.failures]}
    return {"status": DeliveryStatus.FAILED, "failures": delivery.failures + 1, "next_attempt_at": None}


@transaction.atomic
def _attempt_record(delivery: WebhookDelivery, result: PostResult, *, now: datetime, lease_until) -> WebhookAttempt:
    attempt = WebhookAttempt.objects.create(
        delivery=delivery, number=delivery.attempts, at=now, status_code=result.status_code,
        latency_ms=result.latency_ms, error=result.error[:500], replay=delivery.replay_requested,
    )  # fmt: skip
    done = {"last_status_code": result.status_code, "lease_until": None, "replay_requested": False}
    held = WebhookDelivery.objects.filter(pk=delivery.pk, lease_until=lease_until)
    # cancelled or replayed meanwhile: the attempt is recorded, the state others set stays
    if not held.filter(status=DeliveryStatus.PENDING).update(**done, **_next_state(delivery, result, now)):
        held.update(**done)
    if delivery.event.type == USER_ERASED:
        transaction.on_commit(lambda: _erased_event_settle(delivery.event_id))
    return attempt


def _erased_event_settle(event_id: int) -> None:
    """Once no delivery of a user.erased event is pending, its copy here forgets the user's external id."""
    if WebhookDelivery.objects.filter(event_id=event_id, status=DeliveryStatus.PENDING).exists():
        return
    event = WebhookEvent.objects.filter(pk=event_id).only("payload").first()
    if event is not None and "user" in event.payload.get("data", {}):
        data = data_stripped(event.payload["data"], keys=frozenset({"user"}))
        WebhookEvent.objects.filter(pk=event_id).update(payload=event.payload | {"data": data})


def webhook_deliveries_requeue(*, now: datetime | None = None) -> int:
    """Queue every pending delivery that is due and not being sent (beat, every 30 s). Returns how many."""
    now = now or timezone.now()
    due = WebhookDelivery.objects.filter(_unleased(now), status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
    ids = list(due.order_by("next_attempt_at").values_list("pk", flat=True)[:REQUEUE_BATCH])
    deliveries_queue(ids)
    return len(ids)


@transaction.atomic
def webhook_delivery_replay(*, delivery: WebhookDelivery, actor: Actor, request_id: str = "") -> WebhookDelivery:
    """Send a delivery's event again, with the same event id, as a new attempt (retried like the first); audited
    `webhook.replay`. Refused (WebhookError) for an event whose end user was erased, or a disabled endpoint."""
    if delivery.event.erased:
        raise WebhookError("this event's end user was erased: it is never sent again")
    if not delivery.endpoint.enabled:
        raise WebhookError("the endpoint is disabled: enable it first")
    now = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.PENDING, failures=0, next_attempt_at=now, lease_until=None, replay_requested=True
    )
    audit_record(
        tenant=delivery.endpoint.tenant_id, actor=actor, action="webhook.replay", target_type="webhook_endpoint",
        target_id=delivery.endpoint_id, detail={"delivery": delivery.pk, "event": delivery.event.public_id},
        request_id=request_id,
    )  # fmt: skip
    transaction.on_commit(lambda: deliveries_queue([delivery.pk]))
    delivery.refresh_from_db()
    return delivery


def webhook_log_expire(*, now: datetime | None = None) -> int:
    """Delete the events older than WEBHOOK_LOG_DAYS whose deliveries are all settled (delivered, failed or
    cancelled), with their deliveries and attempts: the delivery log keeps a month of what was sent, not every
    notification for ever. Notifications, not memory: a legal hold keeps the memory and its audit trail, not copies
    sent to the tenant's own systems. Idempotent; returns how many events went."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.WEBHOOK_LOG_DAYS)
    unsettled = WebhookDelivery.objects.filter(event=OuterRef("pk"), status=DeliveryStatus.PENDING)
    old = WebhookEvent.objects.filter(created_at__lt=cutoff).exclude(Exists(unsettled))
    _, by_model = old.delete()
    return by_model.get(WebhookEvent._meta.label, 0)
