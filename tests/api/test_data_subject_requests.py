"""Data-subject requests through the API (scope govern): log one, list by deadline, read one, answer it; an erasure
attaches its receipt and the request outlives the user; a legal hold answers 409 and leaves it open."""

from __future__ import annotations

from memory.models import AuditEntry, DataSubjectRequest, EndUser, ErasureReceipt
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from tests.api.conftest import error_of

URL = "/api/v1/data-subject-requests/"


def log(client, kind="erasure", user="alice", **extra):
    body = {"kind": kind, "user": user, "requester": "Alice, alice@example.org"} | extra
    return client.post(URL, body, format="json")


def test_a_request_is_logged_due_a_month_later_and_listed(api, alice):
    logged = log(api, received_at="2025-01-31T10:00:00Z", identity_check="Known address")

    assert logged.status_code == 201
    body = logged.json()
    assert (body["status"], body["channel"], body["due_at"], body["deadline"]) == (
        "open", "api", "2025-02-28T10:00:00Z", "2025-02-28T10:00:00Z",
    )  # fmt: skip
    listed = api.get(URL, {"status": "open"}).json()["results"]
    assert [r["id"] for r in listed] == [body["id"]]
    assert api.get(f"{URL}{body['id']}/").json()["identity_check"] == "Known address"


def test_fulfilling_an_erasure_attaches_the_receipt_and_the_request_survives(api, alice):
    request_id = log(api).json()["id"]

    fulfilled = api.post(f"{URL}{request_id}/fulfil/", {"note": "Identity confirmed"}, format="json")

    assert fulfilled.status_code == 200, fulfilled.content
    assert fulfilled.json()["erasure_receipt"] == ErasureReceipt.objects.get().pk
    assert not EndUser.objects.filter(pk=alice.pk).exists()
    again = api.get(f"{URL}{request_id}/").json()
    assert (again["status"], again["user"]) == ("fulfilled", "alice")
    assert AuditEntry.objects.filter(action="dsr.fulfil", target_id=request_id).exists()


def test_an_erasure_under_legal_hold_is_a_conflict_and_stays_open(api, alice):
    legal_hold_place(end_user=alice, actor=Actor.system("test"), reason="Litigation")
    request_id = log(api).json()["id"]

    response = api.post(f"{URL}{request_id}/fulfil/", {}, format="json")

    assert response.status_code == 409 and error_of(response)["code"] == "legal_hold"
    assert DataSubjectRequest.objects.get().status == "open"
    assert AuditEntry.objects.filter(action="dsr.held", target_id=request_id).exists()


def test_refusing_needs_a_reason_and_answering_twice_is_refused(api, alice):
    request_id = log(api).json()["id"]

    assert api.post(f"{URL}{request_id}/refuse/", {}, format="json").status_code == 400
    assert api.post(f"{URL}{request_id}/refuse/", {"note": "Unfounded"}, format="json").status_code == 200
    again = api.post(f"{URL}{request_id}/withdraw/", {}, format="json")
    assert again.status_code == 400 and "already refused" in error_of(again)["message"]


def test_a_caller_without_govern_is_forbidden_and_another_tenant_sees_nothing(scoped_api, stranger_api, api, alice):
    request_id = log(api).json()["id"]

    assert scoped_api("read,write").get(URL).status_code == 403
    assert stranger_api.get(f"{URL}{request_id}/").status_code == 404
    assert stranger_api.post(f"{URL}{request_id}/fulfil/", {}, format="json").status_code == 404
    assert stranger_api.get(URL).json()["results"] == []
