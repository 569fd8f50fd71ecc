"""Marking a fact or a page outdated (and current again) through the API: audited with the token as actor, kept as
history, shown in the item's fields; another tenant's ids are 404."""

from __future__ import annotations

from memory.models import AuditEntry, KnowledgeEntry
from tests import builders
from tests.api.conftest import error_of


def test_a_fact_marked_outdated_answers_its_validity_and_stays_readable(api, memory):
    url = f"/api/v1/knowledge/{memory.knowledge.pk}/"

    response = api.post(url + "outdated/", {"reason": "She rehomed him", "replacement": "a cat"}, format="json")

    body = response.json()
    assert response.status_code == 200 and body["valid_to"] and body["outdated_note"] == "a cat"
    assert body["text"] == memory.knowledge.text and body["superseded_by"] is None and "valid_from" in body
    assert api.get(url).json()["valid_to"] == body["valid_to"]
    entry = AuditEntry.objects.get(action="knowledge.outdated")
    assert entry.actor_kind == "api_token" and entry.reason == "She rehomed him"


def test_marking_current_again_clears_it_and_is_audited(api, memory):
    url = f"/api/v1/knowledge/{memory.knowledge.pk}/"
    api.post(url + "outdated/", {"reason": "r"}, format="json")

    body = api.post(url + "current/", {"reason": "mistake"}, format="json").json()

    assert (body["valid_to"], body["outdated_note"]) == (None, "")
    assert AuditEntry.objects.get(action="knowledge.current").reason == "mistake"


def test_a_page_is_marked_outdated_and_its_fields_say_so(api, memory):
    body = {"reason": "r", "replacement": "sunny"}
    response = api.post(f"/api/v1/pages/{memory.stm_page.pk}/outdated/", body, format="json")

    assert response.status_code == 200 and response.json()["outdated_note"] == "sunny"
    assert AuditEntry.objects.filter(action="page.outdated", target_id=memory.stm_page.pk).exists()


def test_a_reason_is_required(api, memory):
    response = api.post(f"/api/v1/knowledge/{memory.knowledge.pk}/outdated/", {"replacement": "x"}, format="json")

    assert response.status_code == 400 and "reason" in error_of(response)["fields"]
    assert KnowledgeEntry.objects.get(pk=memory.knowledge.pk).valid_to is None


def test_marking_twice_changes_nothing_more(api, memory):
    url = f"/api/v1/knowledge/{memory.knowledge.pk}/outdated/"
    first = api.post(url, {"reason": "r", "replacement": "a cat"}, format="json").json()

    second = api.post(url, {"reason": "r", "replacement": "a dog"}, format="json").json()

    assert (second["valid_to"], second["outdated_note"]) == (first["valid_to"], "a cat")
    assert AuditEntry.objects.filter(action="knowledge.outdated").count() == 1


def test_validity_is_not_changed_by_patch(api, memory):
    url = f"/api/v1/knowledge/{memory.knowledge.pk}/"

    api.patch(url, {"pinned": True, "valid_to": "2020-01-01T00:00:00Z", "reason": "r"}, format="json")

    assert KnowledgeEntry.objects.get(pk=memory.knowledge.pk).valid_to is None


def test_another_tenants_fact_is_not_found(stranger_api, memory):
    response = stranger_api.post(f"/api/v1/knowledge/{memory.knowledge.pk}/outdated/", {"reason": "r"}, format="json")

    assert response.status_code == 404
    assert KnowledgeEntry.objects.get(pk=memory.knowledge.pk).valid_to is None


def test_a_superseded_fact_names_the_fact_that_replaced_it(api, memory, alice):
    newer = builders.knowledge(alice, text="Alice has a basset.")
    KnowledgeEntry.objects.filter(pk=memory.knowledge.pk).update(valid_to=builders.T0, superseded_by=newer)

    body = api.get(f"/api/v1/knowledge/{memory.knowledge.pk}/").json()

    assert body["superseded_by"] == newer.pk
