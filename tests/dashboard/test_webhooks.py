"""Webhooks in the console, for admins: an endpoint added with its secret shown once, a page per endpoint with the
delivery log (each attempt), a test event, a replay with the same event id, and every change audited."""

from __future__ import annotations

import re

import pytest

from memory.models import AuditEntry, WebhookDelivery, WebhookEndpoint
from memory.services.audit import Actor
from memory.services.supersession import knowledge_supersede
from memory.services.webhook_delivery import RETRY_DELAYS, webhook_deliver
from memory.services.webhook_endpoints import webhook_endpoint_create
from tests import builders
from tests.dashboard.conftest import HX

WEBHOOKS = "/console/acme/webhooks/"
NEW = "/console/acme/webhooks/new/"
SECRET = re.compile(r"whsec_[A-Za-z0-9+/]{32}")
SYSTEM = Actor.system("test")


@pytest.fixture
def endpoint(tenant, receiver):
    return webhook_endpoint_create(tenant=tenant, url=receiver.url, event_types=["fact.superseded"], actor=SYSTEM)


def _supersede(alice, capture, n: int = 0) -> None:
    earlier = builders.knowledge(alice, text=f"Alice lives in Paris, flat {n}.")
    later = builders.knowledge(alice, text=f"Alice lives in Berlin, flat {n}.")
    with capture(execute=True):
        knowledge_supersede(entries=[later], named={later.id: earlier.id})


def test_an_admin_sees_the_endpoints_without_their_secrets(client, admin_user, endpoint):
    client.force_login(admin_user)

    response = client.get(WEBHOOKS)

    body = response.content.decode()
    assert response.status_code == 200 and "<html" in body and endpoint.endpoint.url in body
    assert endpoint.secret not in body and 'href="/console/acme/webhooks/"' in body


def test_an_htmx_request_gets_only_the_list(client, admin_user, endpoint):
    client.force_login(admin_user)

    body = client.get(WEBHOOKS, **HX).content.decode()

    assert "<html" not in body and 'id="endpoint-list"' in body and "Add an endpoint" not in body


def test_a_supervisor_may_not_manage_webhooks(client, supervisor_user, endpoint):
    client.force_login(supervisor_user)

    assert client.get(WEBHOOKS).status_code == 403


def test_an_added_endpoint_shows_its_secret_once_and_is_audited(client, admin_user, receiver):
    client.force_login(admin_user)

    response = client.post(NEW, {"url": receiver.url, "event_types": ["user.erased", "fact.learned"], "enabled": "on"})

    [secret] = SECRET.findall(response.content.decode())
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == secret and endpoint.event_types == ["fact.learned", "user.erased"]
    assert "no-store" in response["Cache-Control"]
    assert secret not in client.get(f"{WEBHOOKS}{endpoint.pk}/").content.decode()
    entry = AuditEntry.objects.get(action="webhook.create")
    assert entry.target_id == endpoint.pk and secret not in str(entry.detail)


def test_a_link_local_url_is_refused_with_the_reason(client, admin_user):
    client.force_login(admin_user)

    response = client.post(NEW, {"url": "https://169.254.169.254/latest", "event_types": ["user.erased"]})

    assert "link-local or metadata address" in response.content.decode() and not WebhookEndpoint.objects.exists()


def test_the_delivery_log_shows_all_three_attempts(
    client, admin_user, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    receiver.statuses = [500, 500]
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    first = delivery.attempt_log.get().at
    webhook_deliver(delivery_id=delivery.pk, now=first + RETRY_DELAYS[0])
    webhook_deliver(delivery_id=delivery.pk, now=first + RETRY_DELAYS[0] + RETRY_DELAYS[1])
    client.force_login(admin_user)

    body = client.get(f"{WEBHOOKS}{endpoint.endpoint.pk}/").content.decode()

    assert body.count('class="attempt"') == 3
    assert body.count("HTTP 500") == 2 and "HTTP 200" in body and "Delivered" in body
    assert delivery.event.public_id in body and "fact.superseded" in body


def test_replay_sends_the_same_event_id_again_and_is_audited(
    client, admin_user, alice, endpoint, receiver, django_capture_on_commit_callbacks
):
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    client.force_login(admin_user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{WEBHOOKS}deliveries/{delivery.pk}/replay/", **HX)

    body = response.content.decode()
    assert "<html" not in body and 'id="delivery-log"' in body and "sent again" in body
    assert [r.headers["webhook-id"] for r in receiver.requests] == [delivery.event.public_id] * 2
    assert AuditEntry.objects.filter(action="webhook.replay", target_id=endpoint.endpoint.pk).count() == 1


def test_the_test_button_sends_a_test_event(client, admin_user, endpoint, receiver, django_capture_on_commit_callbacks):
    client.force_login(admin_user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{WEBHOOKS}{endpoint.endpoint.pk}/test/")

    assert response.status_code == 302
    assert [r.payload["type"] for r in receiver.requests] == ["webhook.test"]
    assert "webhook.test" in client.get(response["Location"]).content.decode()


def test_a_new_secret_is_shown_once_and_signs_from_then_on(client, admin_user, endpoint):
    client.force_login(admin_user)

    response = client.post(f"{WEBHOOKS}{endpoint.endpoint.pk}/secret/", **HX)

    [secret] = SECRET.findall(response.content.decode())
    assert secret != endpoint.secret and WebhookEndpoint.objects.get().secret == secret
    assert AuditEntry.objects.filter(action="webhook.rotate_secret").exists()


def test_an_edit_disables_the_endpoint_and_is_audited(client, admin_user, endpoint, receiver):
    client.force_login(admin_user)

    response = client.post(
        f"{WEBHOOKS}{endpoint.endpoint.pk}/edit/", {"url": receiver.url, "event_types": ["user.erased"]}
    )

    assert response.status_code == 302
    saved = WebhookEndpoint.objects.get()
    assert (saved.enabled, saved.event_types) == (False, ["user.erased"])
    entry = AuditEntry.objects.get(action="webhook.update")
    assert entry.before == {"event_types": ["fact.superseded"], "enabled": True}


def test_a_deleted_endpoint_is_gone_and_audited(client, admin_user, endpoint):
    client.force_login(admin_user)

    response = client.post(f"{WEBHOOKS}{endpoint.endpoint.pk}/delete/")

    assert response.status_code == 302 and not WebhookEndpoint.objects.exists()
    assert AuditEntry.objects.filter(action="webhook.delete").exists()


def test_another_tenants_endpoint_and_delivery_are_404(
    client, other_operator, alice, endpoint, django_capture_on_commit_callbacks
):
    _supersede(alice, django_capture_on_commit_callbacks)
    delivery = WebhookDelivery.objects.get()
    client.force_login(other_operator)
    theirs = "/console/globex/webhooks/"

    assert client.get(f"{theirs}{endpoint.endpoint.pk}/").status_code == 404
    assert client.post(f"{theirs}{endpoint.endpoint.pk}/test/").status_code == 404
    assert client.post(f"{theirs}deliveries/{delivery.pk}/replay/").status_code == 404
    assert client.get(f"{WEBHOOKS}{endpoint.endpoint.pk}/").status_code == 404


# session, user, membership, role; the endpoint; the log's count, its deliveries with their events, their attempts
ENDPOINT_PAGE_QUERIES = 8


def test_the_endpoint_page_costs_the_same_for_one_delivery_and_for_many(
    client, admin_user, alice, endpoint, django_capture_on_commit_callbacks, django_assert_num_queries
):
    _supersede(alice, django_capture_on_commit_callbacks)
    client.force_login(admin_user)
    with django_assert_num_queries(ENDPOINT_PAGE_QUERIES):
        client.get(f"{WEBHOOKS}{endpoint.endpoint.pk}/")

    for n in range(1, 4):
        _supersede(alice, django_capture_on_commit_callbacks, n)
    assert WebhookDelivery.objects.count() == 4
    with django_assert_num_queries(ENDPOINT_PAGE_QUERIES):
        client.get(f"{WEBHOOKS}{endpoint.endpoint.pk}/")


def test_the_endpoint_page_is_a_whole_page_and_its_log_a_fragment_for_htmx(client, admin_user, endpoint):
    client.force_login(admin_user)
    url = f"{WEBHOOKS}{endpoint.endpoint.pk}/"

    page, fragment = client.get(url).content.decode(), client.get(url, **HX).content.decode()

    assert "<html" in page and 'id="delivery-log"' in page and "Settings" in page
    assert "<html" not in fragment and 'id="delivery-log"' in fragment and "Settings" not in fragment
