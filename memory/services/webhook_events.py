"""Webhook events: what the services where things happen emit, recorded after their transaction commits.

A service calls `webhook_events_emit` inside its transaction; that costs no query. After the commit, the tenant's
enabled endpoints that want one of the types are read (one query); when none does, nothing more happens. Otherwise
each event is recorded once (`WebhookEvent`, its JSON body), a delivery per endpoint that wants it, and each delivery
is queued (memory.services.webhook_delivery).

What an event's `data` holds: ids, the end user's external id (`user`), codes (kinds, states, dates) and, under the
keys in TEXT_KEYS only, text, masked with the tenant's mask-in-console categories (and stricter) as operators see
it; a fact still awaiting review is sent without its text. No event about an erased user is recorded after their
erasure: the user's row is read under a share lock, so an erasure commits either before (the event is dropped) or
after (its `webhook_events_erase` strips the event and cancels its deliveries).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from memory.models import ReviewState
from memory.models.webhooks import DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent
from memory.services.personal_data import console_redactor
from memory.webhooks import event_id_generate

TEXT_KEYS = frozenset({"text", "note", "replacement"})
USER_ERASED = "user.erased"


@dataclass(frozen=True)
class Event:
    """An event as a service emits it: its type, its data, the end user it is about, a key to emit it only once."""

    type: str
    data: dict
    subject_id: int | None = None
    key: str = ""


def item_data(*, kind: str, id: int, text: str | None = None) -> dict:
    """A memory item as events name it: its kind (knowledge, page, segment, profile_version), id and maybe text."""
    return {"kind": kind, "id": id} | ({"text": text} if text is not None else {})


def fact_item(entry) -> dict:
    """A fact as events name it: its text only once approved (a fact awaiting review may hold what review is for)."""
    approved = entry.review_state == ReviewState.APPROVED
    return item_data(kind="knowledge", id=entry.pk, text=entry.text if approved else None)


def facts_learned(entries, *, user: str, source: str) -> list[Event]:
    """`fact.learned` for each new fact of one end user (`source`: promotion or import)."""
    return [
        Event(
            "fact.learned",
            {"user": user, "source": source, "item": fact_item(entry), "review_state": entry.review_state},
            subject_id=entry.end_user_id,
        )
        for entry in entries
    ]


def webhook_events_emit(*, tenant_id: int, events: Iterable[Event]) -> None:
    """Record `events` for the tenant's endpoints once the caller's transaction commits (at once outside one).

    No query before the commit; after it, one when no endpoint wants them. Never raises into the caller's work."""
    events = list(events)
    if events:
        # robust: a failure here is logged, never undoes or fails the work that emitted the events
        transaction.on_commit(lambda: webhook_events_record(tenant_id=tenant_id, events=events), robust=True)


def webhook_event_emit(*, tenant_id: int, type: str, data: dict, subject_id: int | None = None, key: str = "") -> None:
    webhook_events_emit(tenant_id=tenant_id, events=[Event(type, data, subject_id, key)])


def webhook_events_record(*, tenant_id: int, events: list[Event], now: datetime | None = None) -> list[int]:
    """Record the events that an enabled endpoint wants, with a delivery each, and queue the deliveries after
    commit. Returns the new deliveries' ids. An event whose `key` was recorded before is skipped (idempotent)."""
    types = sorted({event.type for event in events})
    endpoints = list(
        WebhookEndpoint.objects.filter(tenant_id=tenant_id, enabled=True, event_types__overlap=types)
        .select_related("tenant")
        .only("id", "event_types", "tenant__slug")
    )
    if not endpoints:
        return []
    with transaction.atomic():
        alive = _subjects_locked({e.subject_id for e in events if e.subject_id is not None and e.type != USER_ERASED})
        events = [e for e in events if e.subject_id is None or e.type == USER_ERASED or e.subject_id in alive]
        recorded = _events_create(endpoints[0].tenant, events, now or timezone.now())
        deliveries = [
            WebhookDelivery(endpoint=endpoint, event=record, next_attempt_at=record.created_at)
            for record in recorded
            for endpoint in endpoints
            if record.type in endpoint.event_types
        ]
        WebhookDelivery.objects.bulk_create(deliveries)
        ids = [delivery.pk for delivery in deliveries]
        transaction.on_commit(lambda: deliveries_queue(ids))
    return ids


def deliveries_queue(delivery_ids: list[int]) -> None:
    from memory.tasks import webhook_deliver_task

    for delivery_id in delivery_ids:
        webhook_deliver_task.delay(delivery_id)


# The end users' rows, share-locked: an erasure (which deletes the row) waits for this transaction, or went first.
SUBJECTS_LOCK_SQL = "SELECT id FROM memory_enduser WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE"


def _subjects_locked(subject_ids: set[int]) -> set[int]:
    if not subject_ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(SUBJECTS_LOCK_SQL, [sorted(subject_ids)])
        return {row[0] for row in cursor.fetchall()}


def _events_create(tenant, events: list[Event], now: datetime) -> list[WebhookEvent]:
    """The events' rows, their text masked; a keyed event recorded before is left out (ON CONFLICT DO NOTHING)."""
    if not events:
        return []
    mask = console_redactor(tenant=tenant.pk) if any(_has_text(e.data) for e in events) else None
    rows = []
    for event in events:
        public_id = event_id_generate()
        data = _masked(event.data, mask) if mask else event.data
        payload = {"id": public_id, "type": event.type, "created_at": now.isoformat(), "tenant": tenant.slug}
        rows.append(
            WebhookEvent(
                tenant=tenant, public_id=public_id, type=event.type, payload=payload | {"data": data},
                subject_id=event.subject_id, key=event.key, created_at=now,
            )
        )  # fmt: skip
    if not any(event.key for event in events):
        return WebhookEvent.objects.bulk_create(rows)
    WebhookEvent.objects.bulk_create(rows, ignore_conflicts=True)
    return list(WebhookEvent.objects.filter(public_id__in=[row.public_id for row in rows]))


def _has_text(value) -> bool:
    if isinstance(value, dict):
        return any((k in TEXT_KEYS and isinstance(v, str) and v) or _has_text(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_text(item) for item in value)
    return False


def _masked(value, mask):
    """`value` with the text under TEXT_KEYS masked (ids, codes and dates are not text and stay)."""
    if isinstance(value, dict):
        return {k: mask(v) if k in TEXT_KEYS and isinstance(v, str) else _masked(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(item, mask) for item in value]
    return value


def data_stripped(value, *, keys: frozenset[str]):
    """`value` without the keys in `keys`, at any depth."""
    if isinstance(value, dict):
        return {k: data_stripped(v, keys=keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [data_stripped(item, keys=keys) for item in value]
    return value


def _strip(events, *, keys: frozenset[str], erased: bool = False) -> int:
    """Rewrite the events' data without `keys`; with `erased`, also cancel their deliveries not sent yet."""
    rows = list(events.only("id", "payload"))
    for row in rows:
        row.payload = row.payload | {"data": data_stripped(row.payload.get("data", {}), keys=keys)}
        row.erased = row.erased or erased
    WebhookEvent.objects.bulk_update(rows, ["payload", "erased"], batch_size=500)
    if erased and rows:
        WebhookDelivery.objects.filter(event__in=[row.pk for row in rows], status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.CANCELLED, next_attempt_at=None
        )
    return len(rows)


def webhook_events_erase(*, tenant_id: int, subject_id: int) -> int:
    """Erasure (inside its transaction): every earlier event about the user loses their external id and all text,
    is never sent again (replays refused), and its deliveries not sent yet are cancelled. Returns how many."""
    events = WebhookEvent.objects.filter(tenant_id=tenant_id, subject_id=subject_id, erased=False)
    return _strip(events.exclude(type=USER_ERASED), keys=TEXT_KEYS | {"user"}, erased=True)


def webhook_events_forget(*, tenant_id: int, subject_id: int, item_ids: set[int]) -> None:
    """After a forget commits: events about the user that name a forgotten item lose their text (ids stay)."""
    if item_ids:
        ids = sorted(item_ids)
        transaction.on_commit(lambda: _forgotten_strip(tenant_id, subject_id, ids), robust=True)


def _forgotten_strip(tenant_id: int, subject_id: int, item_ids: list[int]) -> int:
    named = Q(payload__data__item__id__in=item_ids) | Q(payload__data__superseded_by__id__in=item_ids)
    events = WebhookEvent.objects.filter(named, tenant_id=tenant_id, subject_id=subject_id, erased=False)
    return _strip(events, keys=TEXT_KEYS)
