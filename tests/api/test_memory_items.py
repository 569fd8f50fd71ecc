"""Pages, segments, knowledge and profile versions: list, read, edit/pin/lock and forget, audited as the token."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, Page, ProfileVersion, Segment
from tests.api.conftest import error_of

REASON = "The customer asked"


def audit_actions() -> list[tuple[str, str]]:
    return list(AuditEntry.objects.order_by("seq").values_list("action", "actor_kind"))


# --- Reading ----------------------------------------------------------------------------------------------------


def test_a_page_is_read_with_its_owner_and_place_in_memory(api, memory):
    body = api.get(f"/api/v1/pages/{memory.mtm_page.pk}/").json()

    assert body["id"] == memory.mtm_page.pk
    assert (body["user"], body["assistant"], body["tier"], body["segment_id"]) == (
        "alice",
        "ava",
        "mtm",
        memory.segment.pk,
    )
    assert body["user_message"] == "I adopted a beagle called Biscuit last spring."
    assert body["text"].startswith("User: I adopted")


def test_an_unknown_page_id_is_404(api, memory):
    for url in ("/api/v1/pages/999999/", "/api/v1/pages/99999999999999999999999/", "/api/v1/pages/abc/"):
        response = api.get(url)
        assert response.status_code == 404, url
        assert error_of(response)["code"] == "not_found"


def test_pages_are_listed_newest_first_and_filtered(api, memory):
    everything = api.get("/api/v1/pages/").json()
    mid_term = api.get("/api/v1/pages/", {"tier": "mtm"}).json()
    of_the_segment = api.get("/api/v1/pages/", {"segment": memory.segment.pk}).json()
    of_nobody = api.get("/api/v1/pages/", {"user": "bob"}).json()

    assert [p["id"] for p in everything["results"]] == [memory.stm_page.pk, memory.mtm_page.pk]
    assert everything["count"] == 2
    assert [p["id"] for p in mid_term["results"]] == [memory.mtm_page.pk]
    assert [p["id"] for p in of_the_segment["results"]] == [memory.mtm_page.pk]
    assert of_nobody["results"] == []


def test_every_list_is_paginated(api, memory):
    first = api.get("/api/v1/pages/", {"page_size": 1}).json()
    second = api.get(first["next"]).json()

    assert [len(first["results"]), len(second["results"])] == [1, 1]
    assert first["previous"] is None and second["next"] is None
    assert api.get("/api/v1/pages/", {"page": 9}).status_code == 404


@pytest.mark.parametrize(
    ("query", "field"), [({"tier": "ltm"}, "tier"), ({"segment": "x"}, "segment"), ({"user": "a b"}, "user")]
)
def test_a_bad_filter_is_a_validation_error(api, memory, query, field):
    response = api.get("/api/v1/pages/", query)

    assert response.status_code == 400
    assert field in error_of(response)["fields"]


def test_a_segment_is_read_with_its_heat_now(api, memory):
    body = api.get(f"/api/v1/segments/{memory.segment.pk}/").json()

    assert body["summary"] == "Alice's beagle Biscuit" and body["page_count"] == 1
    assert body["l_interaction"] == 1 and 0 < body["r_recency"] <= 1
    assert body["heat"] == pytest.approx(body["n_visit"] + body["l_interaction"] + body["r_recency"])


def test_a_segments_heat_history_is_listed_oldest_first(api, memory):
    body = api.get(f"/api/v1/segments/{memory.segment.pk}/heat/").json()

    assert [(s["event"], s["heat"]) for s in body["results"]] == [("created", 2.0)]


def test_knowledge_and_profile_versions_are_listed_and_read(api, memory):
    knowledge = api.get("/api/v1/knowledge/", {"user": "alice", "kind": "user"}).json()
    versions = api.get("/api/v1/profile-versions/", {"user": "alice"}).json()
    current = api.get("/api/v1/users/alice/profile/").json()

    assert [(k["id"], k["source_page_ids"]) for k in knowledge["results"]] == [
        (memory.knowledge.pk, [memory.mtm_page.pk])
    ]
    assert [v["id"] for v in versions["results"]] == [memory.profile.pk]
    assert current["text"] == "Alice owns a beagle."
    assert api.get(f"/api/v1/knowledge/{memory.knowledge.pk}/").json()["text"] == memory.knowledge.text
    assert api.get(f"/api/v1/profile-versions/{memory.profile.pk}/").json()["number"] == 1


def test_a_user_without_a_profile_has_none_to_read(api, bob):
    response = api.get("/api/v1/users/bob/profile/")

    assert response.status_code == 404


# --- Changing ---------------------------------------------------------------------------------------------------


def test_pinning_a_page_is_audited_with_the_token_as_actor(api, memory):
    response = api.patch(f"/api/v1/pages/{memory.mtm_page.pk}/", {"pinned": True, "reason": REASON}, format="json")

    assert response.status_code == 200 and response.json()["pinned"] is True
    assert Page.objects.get(pk=memory.mtm_page.pk).pinned
    entry = AuditEntry.objects.get(action="page.pin")
    assert (entry.actor_kind, entry.reason, entry.target_id) == ("api_token", REASON, memory.mtm_page.pk)


def test_a_change_without_a_reason_is_refused(api, memory):
    response = api.patch(f"/api/v1/pages/{memory.mtm_page.pk}/", {"pinned": True}, format="json")

    assert response.status_code == 400
    assert "reason" in error_of(response)["fields"]
    assert not Page.objects.get(pk=memory.mtm_page.pk).pinned


def test_editing_a_segment_rewrites_its_summary_and_keywords(api, memory):
    body = {"summary": "Biscuit the beagle's walks", "keywords": ["walks", "beagle"], "locked": True, "reason": REASON}

    response = api.patch(f"/api/v1/segments/{memory.segment.pk}/", body, format="json")

    assert response.status_code == 200
    segment = Segment.objects.get()
    assert (segment.summary, segment.keywords, segment.locked) == (
        "Biscuit the beagle's walks",
        ["walks", "beagle"],
        True,
    )
    assert audit_actions()[-2:] == [("segment.edit", "api_token"), ("segment.lock", "api_token")]


def test_keywords_need_the_summary_they_describe(api, memory):
    response = api.patch(f"/api/v1/segments/{memory.segment.pk}/", {"keywords": ["x"], "reason": REASON}, format="json")

    assert response.status_code == 400
    assert "summary" in error_of(response)["fields"]


def test_editing_knowledge_corrects_the_fact(api, memory):
    body = {"text": "Alice has two beagles.", "pinned": True, "reason": REASON}

    response = api.patch(f"/api/v1/knowledge/{memory.knowledge.pk}/", body, format="json")

    assert response.json()["text"] == "Alice has two beagles." and response.json()["pinned"] is True
    assert KnowledgeEntry.objects.get().text == "Alice has two beagles."


def test_an_oversized_edit_is_refused(api, memory):
    response = api.patch(
        f"/api/v1/knowledge/{memory.knowledge.pk}/", {"text": "x" * 4001, "reason": REASON}, format="json"
    )

    assert response.status_code == 400
    assert "text" in error_of(response)["fields"]


def test_writing_a_profile_adds_a_version(api, memory):
    response = api.post(
        "/api/v1/users/alice/profile/", {"text": "Alice owns two beagles.", "reason": REASON}, format="json"
    )

    assert response.status_code == 201 and response.json()["number"] == 2
    assert ProfileVersion.objects.count() == 2
    assert AuditEntry.objects.get(action="profile.edit").actor_kind == "api_token"


def test_locking_a_profile_version(api, memory):
    response = api.patch(
        f"/api/v1/profile-versions/{memory.profile.pk}/", {"locked": True, "reason": REASON}, format="json"
    )

    assert response.json()["locked"] is True


# --- Forgetting -------------------------------------------------------------------------------------------------


def test_forgetting_a_page_removes_it_and_what_quotes_it(api, memory):
    response = api.post(f"/api/v1/pages/{memory.mtm_page.pk}/forget/", {"reason": REASON}, format="json")

    assert response.status_code == 200
    assert response.json()["forgotten"] == {"pages": 1, "segments": 1, "knowledge": 1}
    assert not Page.objects.filter(pk=memory.mtm_page.pk).exists()
    assert api.get(f"/api/v1/pages/{memory.mtm_page.pk}/").status_code == 404
    assert AuditEntry.objects.get(action="page.forget").actor_kind == "api_token"


def test_forgetting_a_segment_knowledge_and_a_profile_version(api, memory):
    assert api.post(f"/api/v1/knowledge/{memory.knowledge.pk}/forget/", {"reason": REASON}, format="json").json() == {
        "forgotten": {"knowledge": 1}
    }
    assert api.post(f"/api/v1/segments/{memory.segment.pk}/forget/", {"reason": REASON}, format="json").json() == {
        "forgotten": {"pages": 1, "segments": 1}
    }
    profile = api.post(f"/api/v1/profile-versions/{memory.profile.pk}/forget/", {"reason": REASON}, format="json")
    assert profile.json() == {"forgotten": {"profile_versions": 1}}
    assert not (Segment.objects.exists() or KnowledgeEntry.objects.exists() or ProfileVersion.objects.exists())


def test_forgetting_needs_a_reason(api, memory):
    response = api.post(f"/api/v1/segments/{memory.segment.pk}/forget/", {}, format="json")

    assert response.status_code == 400
    assert Segment.objects.exists()
