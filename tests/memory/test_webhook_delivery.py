"""Webhook deliveries: signed in the Standard Webhooks style, retried with back-off until a 2xx, every attempt
recorded, never sent twice, replayed with the same event id."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import DeliveryStatus, KnowledgeEntry, WebhookAttempt, WebhookDelivery, WebhookEvent
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.supersession import knowledge_supersede
from memory.services.webhook_delivery import (
    RETRY_DELAYS,
    WebhookError,
    webhook_deliver,
    webhook_deliveries_requeue,
    webhook_delivery_replay,
    webhook_log_expire,
)
from memory.services.webhook_endpoints import webhook_endpoint_create, webhook_endpoint_test
from memory.tasks import webhook_deliver_task
from tests import builders

SYSTEM = Actor.system("test")


def _endpoint(tenant, receiver, *types: str):
    return webhook_endpoint_create(tenant=tenant, url=receiver.url, event_types=list(types), actor=SYSTEM)


def _supersede(alice, capture):
    earlier = builders.knowledge(alice, text="Alice lives in Paris.")
    later = builders.knowledge(alice, text="Alice lives in Berlin.")
    with capture(execute=True):
        knowledge_supersede(entries=[later], named={later.id: earlier.id})
    return earlier, later


def test_a_receiver_gets_a_signed_fact_superseded_event_that_verifies_with_the_secret(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    created = _endpoint(tenant, receiver, "fact.superseded")

    earlier, later = _supersede(alice, django_capture_on_commit_callbacks)

    [request] = receiver.requests
    assert request.path == "/hooks/memory" and request.signed_with(created.secret)
    assert request.headers["webhook-signature"].startswith("v1,")
    payload = request.payload
    assert payload["id"] == request.headers["webhook-id"] and payload["id"].startswith("evt_")
    assert (payload["type"], payload["tenant"]) == ("fact.superseded", "acme")
    assert payload["data"] == {
        "user": "alice",
        "item": {"kind": "knowledge", "id": earlier.id, "text": "Alice lives in Paris."},
        "superseded_by": {"kind": "knowledge", "id": later.id, "text": "Alice lives in Berlin."},
        "by": "model",
    }
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED


def test_a_request_signed_with_another_secret_does_not_verify(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    _endpoint(tenant, receiver, "fact.superseded")
    other = _endpoint(tenant, receiver, "legal_hold.placed")

    _supersede(alice, django_capture_on_commit_callbacks)

    [request] = receiver.requests
    assert not request.signed_with(other.secret)


def test_a_receiver_gets_a_signed_user_erased_event(tenant, alice, receiver, django_capture_on_commit_callbacks):
    created = _endpoint(tenant, receiver, "user.erased")

    with django_capture_on_commit_callbacks(execute=True):
        erasure = user_erase(end_user=alice, actor=SYSTEM, legal_basis="GDPR Art. 17", dry_run=False)

    [request] = receiver.requests
    assert request.signed_with(created.secret)
    data = request.payload["data"]
    assert request.payload["type"] == "user.erased"
    assert data == {"user": "alice", "receipt_id": erasure.receipt.pk, "subject_ref": erasure.receipt.subject_ref}


def test_a_receiver_that_fails_twice_gets_the_event_on_the_third_attempt(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    _endpoint(tenant, receiver, "fact.superseded")
    receiver.statuses = [500, 500]

    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    first = WebhookAttempt.objects.get(delivery=delivery).at
    webhook_deliver(delivery_id=delivery.pk, now=first + RETRY_DELAYS[0])
    webhook_deliver(delivery_id=delivery.pk, now=first + RETRY_DELAYS[0] + RETRY_DELAYS[1])

    delivery.refresh_from_db()
    assert [a.status_code for a in delivery.attempt_log.order_by("number")] == [500, 500, 200]
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (DeliveryStatus.DELIVERED, 3, 200)
    assert len({request.headers["webhook-id"] for request in receiver.requests}) == 1  # one event, three attempts


def test_a_failed_attempt_waits_for_its_back_off_before_the_next(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    _endpoint(tenant, receiver, "fact.superseded")
    receiver.statuses = [503]

    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    at = delivery.attempt_log.get().at

    assert webhook_deliver(delivery_id=delivery.pk, now=at + RETRY_DELAYS[0] - timedelta(seconds=1)) is None
    assert webhook_deliveries_requeue(now=at + timedelta(seconds=1)) == 0
    assert len(receiver.requests) == 1
    delivery.refresh_from_db()
    assert delivery.next_attempt_at == at + RETRY_DELAYS[0] and delivery.status == DeliveryStatus.PENDING


def test_the_sweep_queues_a_delivery_once_it_is_due(tenant, alice, receiver, django_capture_on_commit_callbacks):
    _endpoint(tenant, receiver, "fact.superseded")
    receiver.statuses = [500]
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))

    assert webhook_deliveries_requeue() == 1

    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and len(receiver.requests) == 2


def test_a_delivery_fails_for_good_after_its_last_retry(tenant, alice, receiver, django_capture_on_commit_callbacks):
    _endpoint(tenant, receiver, "fact.superseded")
    receiver.statuses = [500] * (len(RETRY_DELAYS) + 1)
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()

    for _ in RETRY_DELAYS:
        delivery.refresh_from_db()
        webhook_deliver(delivery_id=delivery.pk, now=delivery.next_attempt_at)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == (DeliveryStatus.FAILED, 8, None)


def test_running_the_task_twice_never_sends_a_delivered_delivery_again(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    _endpoint(tenant, receiver, "fact.superseded")
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()

    webhook_deliver_task.delay(delivery.pk)
    webhook_deliver_task.delay(delivery.pk)

    assert len(receiver.requests) == 1 and WebhookAttempt.objects.count() == 1


def test_a_replay_sends_the_same_event_id_again_as_a_new_attempt(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    created = _endpoint(tenant, receiver, "fact.superseded")
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.select_related("endpoint", "event").get()

    with django_capture_on_commit_callbacks(execute=True):
        webhook_delivery_replay(delivery=delivery, actor=SYSTEM)

    first, again = receiver.requests
    assert first.headers["webhook-id"] == again.headers["webhook-id"] == delivery.event.public_id
    assert again.signed_with(created.secret) and first.payload == again.payload
    assert [(a.number, a.replay) for a in delivery.attempt_log.order_by("number")] == [(1, False), (2, True)]


def test_a_test_event_reaches_the_endpoint_whatever_it_subscribes_to(
    tenant, receiver, django_capture_on_commit_callbacks
):
    created = _endpoint(tenant, receiver, "dsr.due_soon")

    with django_capture_on_commit_callbacks(execute=True):
        webhook_endpoint_test(endpoint=created.endpoint, actor=SYSTEM)

    [request] = receiver.requests
    assert request.payload["type"] == "webhook.test" and request.signed_with(created.secret)


def test_an_address_that_resolves_to_the_metadata_service_is_refused_at_delivery(
    tenant, alice, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    webhook_endpoint_create(
        tenant=tenant, url="https://hooks.example.com/in", event_types=["fact.superseded"], actor=SYSTEM
    )
    monkeypatch.setattr("memory.webhook_transport.addresses_resolve", lambda host, port: ["169.254.169.254"])

    _supersede(alice, django_capture_on_commit_callbacks)

    attempt = WebhookAttempt.objects.get()
    assert attempt.status_code is None and attempt.error.startswith("refused: 169.254.169.254 is a link-local")


def test_a_loopback_endpoint_is_refused_at_delivery_once_private_addresses_are_not_allowed(
    tenant, alice, receiver, settings, django_capture_on_commit_callbacks
):
    _endpoint(tenant, receiver, "fact.superseded")
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False

    _supersede(alice, django_capture_on_commit_callbacks)

    assert receiver.requests == [] and "refused" in WebhookAttempt.objects.get().error


def test_an_erased_users_event_is_never_replayed(tenant, alice, receiver, django_capture_on_commit_callbacks):
    _endpoint(tenant, receiver, "fact.superseded")
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.select_related("endpoint", "event").get()
    user_erase(end_user=alice, actor=SYSTEM, legal_basis="GDPR Art. 17", dry_run=False)
    delivery.event.refresh_from_db()

    with pytest.raises(WebhookError, match="erased"):
        webhook_delivery_replay(delivery=delivery, actor=SYSTEM)


def test_the_documented_verification_snippet_accepts_a_real_delivery(
    tenant, alice, receiver, django_capture_on_commit_callbacks
):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "webhooks.md").read_text()
    snippet = doc.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(snippet, namespace)  # our own documentation's example
    created = _endpoint(tenant, receiver, "fact.superseded")

    _supersede(alice, django_capture_on_commit_callbacks)

    [request] = receiver.requests
    assert namespace["verify"](created.secret, request.headers, request.body)
    assert not namespace["verify"](created.secret, request.headers, request.body + b" ")


def test_the_log_keeps_a_settled_event_for_its_days_then_lets_it_go_and_keeps_one_still_pending(
    tenant, alice, receiver, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_LOG_DAYS = 30
    _endpoint(tenant, receiver, "fact.superseded")
    receiver.statuses = [200, 500]
    _supersede(alice, django_capture_on_commit_callbacks)  # delivered
    later = builders.knowledge(alice, text="Alice lives in Lisbon.")
    earlier = KnowledgeEntry.objects.get(text="Alice lives in Berlin.")
    with django_capture_on_commit_callbacks(execute=True):
        knowledge_supersede(entries=[later], named={later.id: earlier.id})  # failed once: still pending
    delivered, pending = WebhookDelivery.objects.order_by("id")
    now = timezone.now()

    assert webhook_log_expire(now=now + timedelta(days=29)) == 0
    assert webhook_log_expire(now=now + timedelta(days=31)) == 1

    assert not WebhookEvent.objects.filter(pk=delivered.event_id).exists()
    assert not WebhookAttempt.objects.filter(delivery_id=delivered.pk).exists()
    assert WebhookDelivery.objects.get().pk == pending.pk and pending.status == DeliveryStatus.PENDING
