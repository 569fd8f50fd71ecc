"""Webhook events: emitted after commit by the services where things happen, only for endpoints that want them,
with text only as the personal-data policy lets operators see it, and nothing about an erased user after erasure."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import DeliveryStatus, ReviewState, WebhookDelivery, WebhookEvent
from memory.services.audit import Actor
from memory.services.data_subject_requests import data_subject_request_open, data_subject_requests_due_soon_emit
from memory.services.gdpr import user_erase
from memory.services.gdpr_export import export_build, export_request
from memory.services.governance import knowledge_forget
from memory.services.legal_hold import legal_hold_place, legal_hold_release
from memory.services.review import knowledge_review
from memory.services.supersession import knowledge_supersede
from memory.services.validity import escalation_open, knowledge_mark_outdated
from memory.services.webhook_endpoints import webhook_endpoint_create, webhook_endpoint_update
from memory.services.webhook_events import Event, webhook_event_emit, webhook_events_record
from tests import builders

SYSTEM = Actor.system("test")


@pytest.fixture(autouse=True)
def exports_in_a_temporary_folder(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"


@pytest.fixture
def endpoint(tenant, receiver):
    """Acme's endpoint that wants every event type."""
    from memory.webhooks import EVENT_TYPES

    return webhook_endpoint_create(tenant=tenant, url=receiver.url, event_types=list(EVENT_TYPES), actor=SYSTEM)


def _sent(receiver, kind: str) -> list[dict]:
    return [request.payload["data"] for request in receiver.requests if request.payload["type"] == kind]


def test_nothing_is_recorded_when_no_endpoint_wants_the_event(tenant, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        legal_hold_place(end_user=alice, actor=SYSTEM, reason="Litigation")

    assert not WebhookEvent.objects.exists()


def test_emitting_costs_no_query_before_the_commit_and_one_after_it_when_nobody_listens(
    tenant, alice, django_assert_num_queries, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks, django_assert_num_queries(0):
        webhook_event_emit(tenant_id=tenant.pk, type="legal_hold.placed", data={"user": "alice"})

    with django_assert_num_queries(1):
        callbacks[0]()


def test_a_disabled_endpoint_hears_nothing(tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks):
    webhook_endpoint_update(endpoint=endpoint.endpoint, enabled=False, actor=SYSTEM)

    with django_capture_on_commit_callbacks(execute=True):
        legal_hold_place(end_user=alice, actor=SYSTEM, reason="Litigation")

    assert receiver.requests == []


def test_an_endpoint_hears_only_the_types_it_wants(tenant, alice, receiver, django_capture_on_commit_callbacks):
    webhook_endpoint_create(tenant=tenant, url=receiver.url, event_types=["legal_hold.released"], actor=SYSTEM)

    with django_capture_on_commit_callbacks(execute=True):
        legal_hold_place(end_user=alice, actor=SYSTEM, reason="Litigation")
    with django_capture_on_commit_callbacks(execute=True):
        hold = legal_hold_release(end_user=alice, actor=SYSTEM, reason="Settled")

    assert [r.payload["type"] for r in receiver.requests] == ["legal_hold.released"]
    assert _sent(receiver, "legal_hold.released") == [{"user": "alice", "legal_hold_id": hold.pk}]


def test_masked_text_is_not_sent(tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks):
    builders.personal_data_policy(tenant, email="mask_console")
    entry = builders.knowledge(alice, text="Alice writes from alice@example.com.")

    with django_capture_on_commit_callbacks(execute=True):
        knowledge_mark_outdated(entry=entry, actor=SYSTEM, reason="Moved", replacement="now bob@example.org")

    [data] = _sent(receiver, "fact.outdated")
    assert "alice@example.com" not in str(data) and "bob@example.org" not in str(data)
    assert data["item"]["id"] == entry.pk and "Alice writes from" in data["item"]["text"]
    assert "@" not in receiver.requests[0].body.decode()


def test_a_fact_awaiting_review_is_announced_without_its_text_and_with_it_once_approved(
    tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    entry = builders.knowledge(alice, text="Alice is allergic to penicillin.")
    entry.review_state = ReviewState.PENDING
    entry.save(update_fields=["review_state"])

    with django_capture_on_commit_callbacks(execute=True):
        knowledge_mark_outdated(entry=entry, actor=SYSTEM, reason="Checked")
    with django_capture_on_commit_callbacks(execute=True):
        knowledge_review(entry=entry, decision="approve", actor=SYSTEM)

    assert "text" not in _sent(receiver, "fact.outdated")[0]["item"]
    assert _sent(receiver, "review.approved") == [
        {"user": "alice", "item": {"kind": "knowledge", "id": entry.pk, "text": "Alice is allergic to penicillin."}}
    ]


def test_a_rejection_is_announced_with_ids_only(tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks):
    entry = builders.knowledge(alice, text="Alice is allergic to penicillin.")
    entry.review_state = ReviewState.PENDING
    entry.save(update_fields=["review_state"])

    with django_capture_on_commit_callbacks(execute=True):
        knowledge_review(entry=entry, decision="reject", actor=SYSTEM, reason="Not said")

    assert _sent(receiver, "review.rejected") == [{"user": "alice", "item": {"kind": "knowledge", "id": entry.pk}}]


def test_a_flagged_item_and_a_forgotten_one_are_announced(
    tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    entry = builders.knowledge(alice, text="Alice has a beagle.")

    with django_capture_on_commit_callbacks(execute=True):
        flagged = escalation_open(tenant=tenant, item=entry, actor=SYSTEM, note="Still true?")
    with django_capture_on_commit_callbacks(execute=True):
        knowledge_forget(entry=entry, actor=SYSTEM, reason="Asked")

    assert _sent(receiver, "item.flagged") == [
        {
            "user": "alice",
            "item": {"kind": "knowledge", "id": entry.pk},
            "escalation_id": flagged.pk,
            "note": "Still true?",
        }
    ]
    [forgotten] = _sent(receiver, "memory.forgotten")
    assert forgotten["item"] == {"kind": "knowledge", "id": entry.pk} and forgotten["action"] == "knowledge.forget"


def test_a_forgotten_fact_leaves_no_text_in_earlier_events(tenant, alice, endpoint, django_capture_on_commit_callbacks):
    earlier = builders.knowledge(alice, text="Alice lives in Paris.")
    later = builders.knowledge(alice, text="Alice lives in Berlin.")
    with django_capture_on_commit_callbacks(execute=True):
        knowledge_supersede(entries=[later], named={later.id: earlier.id})

    with django_capture_on_commit_callbacks(execute=True):
        knowledge_forget(entry=earlier, actor=SYSTEM, reason="Asked")

    stored = WebhookEvent.objects.get(type="fact.superseded").payload["data"]
    assert stored["item"] == {"kind": "knowledge", "id": earlier.pk} and "text" not in stored["superseded_by"]


def test_an_export_ready_is_announced_without_its_link(
    tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = export_request(end_user=alice, actor=SYSTEM)

    with django_capture_on_commit_callbacks(execute=True):
        export_build(job_id=job.pk)

    [data] = _sent(receiver, "export.ready")
    assert set(data) == {"user", "export_id", "expires_at"} and data["export_id"] == job.pk


def test_erasure_cancels_the_users_pending_deliveries_and_strips_their_text(
    tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    receiver.statuses = [500]
    entry = builders.knowledge(alice, text="Alice has a beagle.")
    with django_capture_on_commit_callbacks(execute=True):
        knowledge_mark_outdated(entry=entry, actor=SYSTEM, reason="Gone", replacement="a cat now")

    with django_capture_on_commit_callbacks(execute=True):
        user_erase(end_user=alice, actor=SYSTEM, legal_basis="GDPR Art. 17", dry_run=False)

    outdated = WebhookEvent.objects.get(type="fact.outdated")
    assert outdated.erased and outdated.payload["data"] == {
        "item": {"kind": "knowledge", "id": entry.pk},
        "valid_to": outdated.payload["data"]["valid_to"],
    }
    assert WebhookDelivery.objects.get(event=outdated).status == DeliveryStatus.CANCELLED
    assert [r.payload["type"] for r in receiver.requests] == ["fact.outdated", "user.erased"]


def test_no_event_about_an_erased_user_is_recorded_after_their_erasure(tenant, alice, endpoint, receiver):
    alice_id = alice.pk
    user_erase(end_user=alice, actor=SYSTEM, legal_basis="GDPR Art. 17", dry_run=False)

    # a promotion that committed just before the erasure records its events just after it
    late = Event("fact.learned", {"user": "alice", "item": {"kind": "knowledge", "id": 1}}, subject_id=alice_id)
    assert webhook_events_record(tenant_id=tenant.pk, events=[late]) == []
    assert not WebhookEvent.objects.filter(type="fact.learned").exists()


def test_a_user_erased_events_copy_forgets_the_external_id_once_delivered(
    tenant, alice, endpoint, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        user_erase(end_user=alice, actor=SYSTEM, legal_basis="GDPR Art. 17", dry_run=False)

    assert "user" not in WebhookEvent.objects.get(type="user.erased").payload["data"]


def test_a_request_near_its_deadline_is_announced_once_per_deadline(
    tenant, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    received = timezone.now() - timedelta(days=27)
    request = data_subject_request_open(
        tenant=tenant, kind="access", external_id="alice", channel="email", requester="Alice",
        received_at=received, actor=SYSTEM,
    )  # fmt: skip

    with django_capture_on_commit_callbacks(execute=True):
        assert data_subject_requests_due_soon_emit() == 1
    with django_capture_on_commit_callbacks(execute=True):
        data_subject_requests_due_soon_emit()

    [data] = _sent(receiver, "dsr.due_soon")
    assert data["request_id"] == request.pk and (data["kind"], data["status"], data["user"]) == (
        "access",
        "open",
        "alice",
    )


def test_a_request_far_from_its_deadline_is_not_announced(tenant, alice, endpoint, receiver):
    data_subject_request_open(
        tenant=tenant, kind="access", external_id="alice", channel="email", requester="Alice",
        received_at=timezone.now(), actor=SYSTEM,
    )  # fmt: skip

    assert data_subject_requests_due_soon_emit() == 0


def test_facts_learnt_by_promotion_are_announced(
    tenant, alice, assistant, endpoint, receiver, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        space = builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks)

    learned = _sent(receiver, "fact.learned")
    facts = set(space.end_user.knowledge.values_list("pk", flat=True))
    assert learned and {data["item"]["id"] for data in learned} <= facts
    assert all(data["source"] == "promotion" and data["user"] == "alice" for data in learned)


def test_facts_imported_from_a_bundle_are_announced(
    tenant, alice, bob, assistant, endpoint, receiver, django_capture_on_commit_callbacks
):
    from memory.services.bundle_import import memory_import
    from tests.bundles import bundle_of

    builders.knowledge(alice, text="Alice has a beagle.")
    with django_capture_on_commit_callbacks(execute=True):
        memory_import(end_user=bob, bundle=bundle_of(alice), actor=SYSTEM)

    [data] = _sent(receiver, "fact.learned")
    assert (data["user"], data["source"], data["item"]["text"]) == ("bob", "import", "Alice has a beagle.")
