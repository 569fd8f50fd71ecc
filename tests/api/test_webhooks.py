"""Webhooks through the API (scope govern): an endpoint created with its secret answered once, changed, deleted,
its deliveries listed with every attempt, and a delivery replayed with the same event id."""

from __future__ import annotations

from memory.models import AuditEntry, WebhookDelivery, WebhookEndpoint
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from tests.api.conftest import error_of

HOOKS = "/api/v1/webhooks/"


def _create(api, url: str, *types: str) -> dict:
    response = api.post(HOOKS, {"url": url, "event_types": list(types)}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_created_endpoint_answers_its_secret_once(api, receiver):
    created = _create(api, receiver.url, "user.erased")

    assert created["secret"].startswith("whsec_") and created["event_types"] == ["user.erased"]
    assert WebhookEndpoint.objects.get().secret == created["secret"]
    assert "secret" not in api.get(f"{HOOKS}{created['id']}/").json()
    assert created["secret"] not in api.get(HOOKS).content.decode()
    assert AuditEntry.objects.filter(action="webhook.create", target_id=created["id"]).exists()


def test_a_metadata_address_and_an_unknown_event_type_are_refused(api):
    refused = api.post(HOOKS, {"url": "http://169.254.169.254/", "event_types": ["user.erased"]}, format="json")
    unknown = api.post(HOOKS, {"url": "https://hooks.example.com/", "event_types": ["page.read"]}, format="json")

    assert refused.status_code == 400 and "link-local or metadata" in error_of(refused)["message"]
    assert unknown.status_code == 400 and "event_types.0" in error_of(unknown)["fields"]
    assert not WebhookEndpoint.objects.exists()


def test_an_endpoint_is_changed_and_deleted_with_an_audit_entry_each(api, receiver):
    created = _create(api, receiver.url, "user.erased")

    changed = api.patch(f"{HOOKS}{created['id']}/", {"enabled": False, "description": "CRM"}, format="json")
    deleted = api.delete(f"{HOOKS}{created['id']}/")

    assert changed.status_code == 200 and (changed.json()["enabled"], changed.json()["description"]) == (False, "CRM")
    assert deleted.status_code == 204 and not WebhookEndpoint.objects.exists()
    assert {"webhook.update", "webhook.delete"} <= set(AuditEntry.objects.values_list("action", flat=True))


def test_a_new_secret_is_answered_once(api, receiver):
    created = _create(api, receiver.url, "user.erased")

    rotated = api.post(f"{HOOKS}{created['id']}/secret/").json()

    assert rotated["secret"] != created["secret"] and WebhookEndpoint.objects.get().secret == rotated["secret"]


def test_deliveries_list_every_attempt_and_a_replay_sends_the_same_event_id(
    api, tenant, alice, receiver, django_capture_on_commit_callbacks
):
    created = _create(api, receiver.url, "legal_hold.placed")
    receiver.statuses = [500]
    with django_capture_on_commit_callbacks(execute=True):
        legal_hold_place(end_user=alice, actor=Actor.system("test"), reason="Litigation")
    delivery = WebhookDelivery.objects.get()

    with django_capture_on_commit_callbacks(execute=True):
        replayed = api.post(f"/api/v1/webhook-deliveries/{delivery.pk}/replay/")
    listed = api.get(f"{HOOKS}{created['id']}/deliveries/").json()

    assert replayed.status_code == 202
    [row] = listed["results"]
    assert row["event_id"] == delivery.event.public_id and row["status"] == "delivered"
    assert [(a["number"], a["status_code"], a["replay"]) for a in row["attempts"]] == [(1, 500, False), (2, 200, True)]
    assert [r.headers["webhook-id"] for r in receiver.requests] == [delivery.event.public_id] * 2


def test_another_tenants_endpoint_is_not_found(stranger_api, api, receiver):
    created = _create(api, receiver.url, "user.erased")

    response = stranger_api.get(f"{HOOKS}{created['id']}/deliveries/")

    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
