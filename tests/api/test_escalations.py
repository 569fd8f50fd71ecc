"""Escalations through the API: a read-only caller flags an item, a caller with write lists and settles it, once;
every step audited; another tenant's items and escalations are 404."""

from __future__ import annotations

from memory.models import AuditEntry, Escalation
from tests.api.conftest import error_of


def flag(client, item, note: str = "n"):
    body = {"kind": item.item_kind, "id": item.pk, "note": note}
    return client.post("/api/v1/escalations/", body, format="json")


def settle(client, escalation_id: int, **body):
    return client.post(f"/api/v1/escalations/{escalation_id}/resolve/", body, format="json")


def test_a_read_only_caller_flags_a_fact_and_a_writer_sees_it_in_the_queue(scoped_api, memory):
    reader, writer = scoped_api("read"), scoped_api("write")

    opened = flag(reader, memory.knowledge, "Stale?")

    assert opened.status_code == 201 and opened.json()["state"] == "open"
    queue = writer.get("/api/v1/escalations/").json()["results"]
    assert [(e["id"], e["kind"], e["item_id"], e["note"], e["user"]) for e in queue] == [
        (opened.json()["id"], "knowledge", memory.knowledge.pk, "Stale?", "alice")
    ]
    assert AuditEntry.objects.get(action="escalation.open").target_id == memory.knowledge.pk


def test_the_read_scope_cannot_list_or_resolve(scoped_api, memory):
    reader = scoped_api("read")
    opened = flag(reader, memory.stm_page).json()

    assert reader.get("/api/v1/escalations/").status_code == 403
    assert settle(reader, opened["id"], resolution="x").status_code == 403


def test_resolving_settles_it_once_and_is_audited(api, memory):
    opened = flag(api, memory.knowledge).json()

    settled = settle(api, opened["id"], resolution="Marked outdated")
    again = settle(api, opened["id"], resolution="again", dismiss=True)

    assert settled.status_code == 200 and settled.json()["state"] == "resolved" and settled.json()["resolved_at"]
    assert again.status_code == 400 and "already settled" in error_of(again)["message"]
    assert AuditEntry.objects.filter(action__in=["escalation.resolve", "escalation.dismiss"]).count() == 1
    assert api.get("/api/v1/escalations/").json()["results"] == []
    assert len(api.get("/api/v1/escalations/", {"state": "resolved"}).json()["results"]) == 1


def test_another_tenants_items_and_escalations_are_not_found(api, stranger_api, memory):
    opened = flag(api, memory.knowledge).json()

    assert flag(stranger_api, memory.knowledge).status_code == 404
    assert settle(stranger_api, opened["id"], resolution="x").status_code == 404
    assert stranger_api.get("/api/v1/escalations/").json()["results"] == []
    assert Escalation.objects.get().state == "open"
