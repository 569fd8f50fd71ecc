"""The review queue over the API (scope `govern`): pending facts and profile versions with their source turns, for
the tenant or one user; approve, edit and approve, or reject with a reason, each audited with the token as actor."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, ProfileVersion, ReviewState
from memory.models.audit import ActorKind
from tests import builders
from tests.api.conftest import error_of
from tests.api.test_query_counts import queries


def pending(item):
    type(item).objects.filter(pk=item.pk).update(review_state=ReviewState.PENDING)
    item.refresh_from_db()
    return item


@pytest.fixture
def fact(memory):
    return pending(memory.knowledge)


@pytest.fixture
def version(memory):
    version = pending(memory.profile)
    version.source_pages.set([memory.mtm_page])
    return version


def test_the_queue_lists_pending_facts_oldest_first_with_the_turns_they_came_from(api, fact, bob, memory):
    builders.knowledge(bob, text="Bob's fact, already approved.")
    later = pending(builders.knowledge(bob, text="Bob sees a therapist."))

    body = api.get("/api/v1/review/knowledge/").json()

    assert [item["id"] for item in body["results"]] == [fact.pk, later.pk]
    first = body["results"][0]
    assert (first["user"], first["review_state"]) == ("alice", "pending")
    assert first["sources"] == [
        {
            "id": memory.mtm_page.pk,
            "assistant": "ava",
            "at": first["sources"][0]["at"],
            "user_message": "I adopted a beagle called Biscuit last spring.",
            "assistant_reply": "Biscuit is a lovely name for a beagle!",
        }
    ]


def test_the_queue_can_be_narrowed_to_one_user(api, fact, bob):
    pending(builders.knowledge(bob, text="Bob sees a therapist."))

    body = api.get("/api/v1/review/knowledge/", {"user": "alice"}).json()

    assert [item["id"] for item in body["results"]] == [fact.pk]
    assert api.get("/api/v1/review/knowledge/", {"user": "nobody"}).json()["results"] == []


def test_pending_profile_versions_are_listed_with_their_turns(api, version, memory):
    body = api.get("/api/v1/review/profile-versions/", {"user": "alice"}).json()

    assert [(item["id"], item["review_state"]) for item in body["results"]] == [(version.pk, "pending")]
    assert [source["id"] for source in body["results"][0]["sources"]] == [memory.mtm_page.pk]


def test_approving_a_fact_lets_it_into_prompts_and_is_audited_with_the_token_as_actor(api, fact):
    response = api.post(f"/api/v1/review/knowledge/{fact.pk}/", {"decision": "approve"}, format="json")

    assert response.status_code == 200 and response.json()["review_state"] == "approved"
    assert KnowledgeEntry.objects.get(pk=fact.pk).review_state == ReviewState.APPROVED
    audit = AuditEntry.objects.get(action="knowledge.approve", target_id=fact.pk)
    assert (audit.actor_kind, audit.actor_label) == (ActorKind.API_TOKEN, "test read,write,govern")
    assert api.get("/api/v1/review/knowledge/").json()["results"] == []


def test_editing_and_approving_a_fact_redacts_the_text_and_keeps_before_and_after(api, fact, tenant):
    builders.personal_data_policy(tenant, email="do_not_store")
    body = {"decision": "approve", "text": "Alice has a beagle (mail ann@example.com).", "reason": "add the contact"}

    response = api.post(f"/api/v1/review/knowledge/{fact.pk}/", body, format="json")

    assert response.json()["text"] == "Alice has a beagle (mail [email])."
    audit = AuditEntry.objects.get(action="knowledge.approve")
    assert (audit.before, audit.after, audit.reason) == (
        "Alice has a beagle called Biscuit.",
        "Alice has a beagle (mail [email]).",
        "add the contact",
    )


def test_rejecting_a_profile_version_needs_a_reason_and_is_audited(api, version):
    url = f"/api/v1/review/profile-versions/{version.pk}/"

    refused = api.post(url, {"decision": "reject"}, format="json")
    response = api.post(url, {"decision": "reject", "reason": "not about the user"}, format="json")

    assert refused.status_code == 400 and "reason" in error_of(refused)["message"]
    assert response.status_code == 200 and response.json()["review_state"] == "rejected"
    assert ProfileVersion.objects.get(pk=version.pk).review_state == ReviewState.REJECTED
    assert AuditEntry.objects.get(action="profile.reject").reason == "not about the user"


def test_an_item_that_is_not_awaiting_review_is_refused_and_nothing_is_audited(api, memory):
    response = api.post(f"/api/v1/review/knowledge/{memory.knowledge.pk}/", {"decision": "reject"}, format="json")

    assert response.status_code == 400
    assert "not awaiting review" in error_of(response)["message"]
    assert not AuditEntry.objects.filter(action__startswith="knowledge.").exists()


def test_an_unknown_decision_is_a_field_error(api, fact):
    response = api.post(f"/api/v1/review/knowledge/{fact.pk}/", {"decision": "maybe"}, format="json")

    assert response.status_code == 400 and "decision" in error_of(response)["fields"]


def test_another_tenants_token_sees_an_empty_queue_and_cannot_decide(stranger_api, fact, version):
    assert stranger_api.get("/api/v1/review/knowledge/").json()["results"] == []
    assert stranger_api.get("/api/v1/review/profile-versions/").json()["results"] == []

    response = stranger_api.post(f"/api/v1/review/knowledge/{fact.pk}/", {"decision": "approve"}, format="json")

    assert response.status_code == 404
    assert KnowledgeEntry.objects.get(pk=fact.pk).review_state == ReviewState.PENDING


@pytest.mark.parametrize("url", ["/api/v1/review/knowledge/", "/api/v1/review/profile-versions/"])
def test_the_queue_costs_the_same_queries_for_two_items_or_twelve(api, alice, bob, assistant, url):
    def add_pending(end_user, n: int) -> None:
        space = builders.space_of(end_user, assistant)
        for i in range(n):
            page = builders.page(space, user_message=f"m{i}", assistant_reply="r")
            pending(builders.knowledge(end_user, text=f"f{i}", source_pages=[page]))
            pending(builders.profile(end_user, text=f"p{i}")).source_pages.set([page])

    add_pending(alice, 2)
    few = queries(api, url)
    add_pending(bob, 10)

    assert queries(api, url) == few
    assert api.get(url).json()["count"] == 12
