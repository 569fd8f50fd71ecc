"""The DPO's inbox of data-subject requests: logging one, the list by deadline with overdue ones marked, a request's
page with its timeline, the steps that answer it (HTMX or plain forms), and the GDPR page's user and receipt lookup."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import DataSubjectRequest, EndUser, ErasureReceipt, RequestStatus
from memory.services.audit import Actor
from memory.services.data_subject_requests import data_subject_request_open
from memory.services.legal_hold import legal_hold_place
from tests.dashboard.conftest import HX

# 4 auth and access + the requests with their users and receipts + the user search (none without a search)
INBOX_QUERIES = 5


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"


def _open(tenant, external_id="alice", kind="erasure", days_ago=1):
    return data_subject_request_open(
        tenant=tenant, kind=kind, external_id=external_id, channel="email", requester="Alice, alice@example.org",
        received_at=timezone.now() - timedelta(days=days_ago), actor=Actor.system("test"),
    )  # fmt: skip


@pytest.fixture
def erasure(tenant, alice):
    return _open(tenant)


def test_a_dpo_logs_a_request_and_lands_on_its_page(client, dpo_user, alice):
    client.force_login(dpo_user)

    response = client.post(
        "/console/acme/requests/new/",
        {"kind": "erasure", "external_id": "alice", "requester": "Alice, by email", "channel": "email",
         "received_at": "2025-01-31T10:00", "identity_check": "Answered from her known address"},
    )  # fmt: skip

    logged = DataSubjectRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/console/acme/requests/{logged.pk}/"
    assert (logged.end_user, logged.created_by, logged.due_at.month, logged.due_at.day) == (alice, dpo_user, 2, 28)


def test_an_invalid_request_form_shows_its_errors(client, dpo_user):
    client.force_login(dpo_user)

    response = client.post("/console/acme/requests/new/", {"kind": "erasure"})

    assert response.status_code == 200 and b"field-errors" in response.content
    assert not DataSubjectRequest.objects.exists()


def test_the_inbox_lists_by_deadline_and_marks_the_overdue(client, dpo_user, tenant, alice, bob):
    late, recent = _open(tenant, days_ago=40), _open(tenant, external_id="bob", kind="access", days_ago=2)
    client.force_login(dpo_user)

    response = client.get("/console/acme/requests/")

    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html
    assert html.index(f"#{late.pk}<") < html.index(f"#{recent.pk}<")
    assert html.count('chip-bad">overdue') == 1


def test_the_inbox_filters_by_status_kind_and_user_and_htmx_gets_only_the_list(client, admin_user, tenant, alice, bob):
    _open(tenant)
    wanted = _open(tenant, external_id="bob", kind="access")
    client.force_login(admin_user)

    response = client.get("/console/acme/requests/", {"kind": "access", "status": "open", "q": "Bob"}, **HX)

    html = response.content.decode()
    assert "<html" not in html and 'id="request-list"' in html
    assert f"#{wanted.pk}<" in html and "Erasure #" not in html
    assert f"/console/acme/users/{bob.pk}/gdpr/" in html  # the user search


def test_the_inbox_costs_the_same_for_few_and_many_requests(client, dpo_user, tenant, alice, django_assert_num_queries):
    _open(tenant)
    client.force_login(dpo_user)
    with django_assert_num_queries(INBOX_QUERIES):
        client.get("/console/acme/requests/")

    for n in range(20):
        _open(tenant, external_id=f"someone-{n}")
    with django_assert_num_queries(INBOX_QUERIES):
        client.get("/console/acme/requests/")


def test_a_request_page_shows_its_timeline_and_htmx_gets_the_case(client, dpo_user, erasure):
    client.force_login(dpo_user)

    page = client.get(f"/console/acme/requests/{erasure.pk}/")
    fragment = client.get(f"/console/acme/requests/{erasure.pk}/", **HX)

    assert "<html" in page.content.decode() and "dsr.open" in page.content.decode()
    assert "<html" not in fragment.content.decode() and 'id="case"' in fragment.content.decode()
    assert "/console/acme/audit/?action=dsr.open" in page.content.decode()


def test_fulfilling_an_erasure_with_a_plain_form_attaches_the_receipt(client, dpo_user, erasure, alice):
    client.force_login(dpo_user)

    response = client.post(f"/console/acme/requests/{erasure.pk}/fulfil/", {"note": "Identity confirmed"})

    assert response.status_code == 302 and response["Location"] == f"/console/acme/requests/{erasure.pk}/"
    erasure.refresh_from_db()
    assert erasure.status == RequestStatus.FULFILLED and erasure.erasure_receipt == ErasureReceipt.objects.get()
    assert not EndUser.objects.filter(pk=alice.pk).exists()
    page = client.get(response["Location"]).content.decode()
    assert f"/console/acme/receipts/{erasure.erasure_receipt.pk}/" in page and "gdpr.erasure" in page


def test_an_htmx_step_swaps_the_case(client, dpo_user, erasure):
    client.force_login(dpo_user)

    response = client.post(f"/console/acme/requests/{erasure.pk}/extend/", {"note": "Complex request"}, **HX)

    html = response.content.decode()
    assert "<html" not in html and 'id="case"' in html and "Complex request" in html
    assert DataSubjectRequest.objects.get().extended_due_at is not None


def test_an_erasure_under_legal_hold_shows_the_refusal_and_stays_open(client, dpo_user, erasure, alice):
    legal_hold_place(end_user=alice, actor=Actor.system("test"), reason="Litigation")
    client.force_login(dpo_user)

    response = client.post(f"/console/acme/requests/{erasure.pk}/fulfil/", **HX)

    assert "legal hold" in response.content.decode() and 'role="alert"' in response.content.decode()
    assert DataSubjectRequest.objects.get().status == RequestStatus.OPEN


def test_refusing_without_a_reason_changes_nothing(client, dpo_user, erasure):
    client.force_login(dpo_user)

    client.post(f"/console/acme/requests/{erasure.pk}/refuse/", {"note": ""})

    assert DataSubjectRequest.objects.get().status == RequestStatus.OPEN


@pytest.mark.parametrize("path", ["requests/", "requests/new/", "requests/{id}/"])
def test_an_agent_and_a_supervisor_are_forbidden(client, agent_user, supervisor_user, erasure, path):
    for user in (agent_user, supervisor_user):
        client.force_login(user)
        assert client.get("/console/acme/" + path.format(id=erasure.pk)).status_code == 403
    assert client.post(f"/console/acme/requests/{erasure.pk}/withdraw/").status_code == 403


def test_another_tenants_request_is_not_found(client, dpo_user, other_tenant, stranger):
    theirs = _open(other_tenant, external_id="stranger")
    client.force_login(dpo_user)

    assert client.get(f"/console/acme/requests/{theirs.pk}/").status_code == 404
    assert client.post(f"/console/acme/requests/{theirs.pk}/withdraw/").status_code == 404
    assert client.get("/console/globex/requests/").status_code == 404


def test_the_gdpr_page_finds_users_and_an_erased_users_receipt_by_external_id(client, dpo_user, erasure, bob):
    client.force_login(dpo_user)
    client.post(f"/console/acme/requests/{erasure.pk}/fulfil/")
    receipt = ErasureReceipt.objects.get()

    page = client.get("/console/acme/gdpr/", {"q": "alice"})
    fragment = client.get("/console/acme/gdpr/", {"q": "bob"}, **HX)

    assert "<html" in page.content.decode() and f"/console/acme/receipts/{receipt.pk}/" in page.content.decode()
    html = fragment.content.decode()
    assert "<html" not in html and f"/console/acme/users/{bob.pk}/gdpr/" in html and "No erasure receipt" in html
