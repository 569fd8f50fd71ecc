"""End users and assistants: create, list, read, deactivate and reactivate, addressed by their external ids."""

from __future__ import annotations

from memory.models import Assistant, AuditEntry, EndUser
from tests.api.conftest import error_of


def test_creating_an_end_user(api, tenant):
    response = api.post(
        "/api/v1/users/", {"external_id": "zoe", "display_name": "Zoe", "email": "z@example.com"}, format="json"
    )

    assert response.status_code == 201
    assert response.json() | {"created_at": None} == {
        "external_id": "zoe",
        "display_name": "Zoe",
        "email": "z@example.com",
        "is_active": True,
        "created_at": None,
        "last_active_at": None,
    }


def test_creating_an_existing_end_user_answers_200_and_changes_nothing(api, alice):
    response = api.post("/api/v1/users/", {"external_id": "alice", "display_name": "Someone else"}, format="json")

    assert response.status_code == 200 and response.json()["display_name"] == "Alice"
    assert EndUser.objects.filter(external_id="alice").count() == 1


def test_bad_end_user_fields_are_named(api, tenant):
    response = api.post("/api/v1/users/", {"external_id": "-bad", "email": "not-an-email"}, format="json")

    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"external_id", "email"}


def test_end_users_are_listed_and_filtered_by_activity(api, alice, bob):
    api.post("/api/v1/users/bob/deactivate/", {"reason": "left"}, format="json")

    everyone = api.get("/api/v1/users/").json()
    active = api.get("/api/v1/users/", {"active": "true"}).json()

    assert [u["external_id"] for u in everyone["results"]] == ["alice", "bob"]
    assert [u["external_id"] for u in active["results"]] == ["alice"]


def test_deactivating_and_reactivating_an_end_user_is_audited(api, alice):
    off = api.post("/api/v1/users/alice/deactivate/", {"reason": "closed the account"}, format="json")
    on = api.post("/api/v1/users/alice/activate/", {}, format="json")

    assert off.json()["is_active"] is False and on.json()["is_active"] is True
    assert list(
        AuditEntry.objects.filter(target_type="end_user").order_by("seq").values_list("action", "actor_kind", "reason")
    ) == [
        ("end_user.deactivate", "api_token", "closed the account"),
        ("end_user.activate", "api_token", ""),
    ]


def test_reading_an_unknown_end_user_is_404(api, tenant):
    assert api.get("/api/v1/users/nobody/").status_code == 404


def test_creating_listing_and_deactivating_assistants(api, tenant):
    created = api.post("/api/v1/assistants/", {"external_id": "max", "name": "Max", "persona": "Terse."}, format="json")
    listed = api.get("/api/v1/assistants/").json()
    off = api.post("/api/v1/assistants/max/deactivate/", {"reason": "retired"}, format="json")

    assert created.status_code == 201 and created.json()["persona"] == "Terse."
    assert [a["external_id"] for a in listed["results"]] == ["ava", "max"]
    assert off.json()["is_active"] is False
    assert not Assistant.objects.get(external_id="max").is_active
    turn = {"user": "alice", "assistant": "max", "user_message": "hi", "assistant_reply": "hello"}
    assert error_of(api.post("/api/v1/turns/", turn, format="json"))["code"] == "deactivated"


def test_an_assistant_needs_a_name(api, tenant):
    response = api.post("/api/v1/assistants/", {"external_id": "max"}, format="json")

    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["name"]


def test_pausing_memory_for_a_user_and_assistant(api, alice):
    body = {"assistant": "ava", "paused": True, "reason": "asked for a break"}

    response = api.post("/api/v1/users/alice/memory-pause/", body, format="json")

    assert response.json() == {"assistant": "ava", "paused": True, "changed": True}
    assert AuditEntry.objects.get(action="memory.pause").actor_kind == "api_token"
