"""The API under a personal-data policy: the prompt it assembles masks what the model must not see; a turn sent
through it is stored redacted."""

from __future__ import annotations

from memory.models import Page
from tests import builders

EMAIL = "ann.lee@example.co.uk"


def test_the_assembled_prompt_and_the_query_embedding_mask_mask_in_prompts_data(api, memory, tenant, embedder):
    builders.personal_data_policy(tenant, email="mask_prompts")

    body = api.post(
        "/api/v1/retrieve/",
        {"user": "alice", "assistant": "ava", "query": f"Is {EMAIL} my address?", "include_prompt": True},
        format="json",
    ).json()

    assert EMAIL not in body["prompt"] and body["prompt"].rstrip().endswith("Is [email] my address?")
    assert "Is [email] my address?" in embedder.inputs and not [t for t in embedder.inputs if EMAIL in t]


def test_a_turn_recorded_through_the_api_is_stored_redacted(api, memory, tenant):
    builders.personal_data_policy(tenant, email="do_not_store")

    response = api.post(
        "/api/v1/turns/",
        {"user": "alice", "assistant": "ava", "user_message": f"Mail {EMAIL}", "assistant_reply": "Will do."},
        format="json",
    )

    assert response.status_code == 201
    assert Page.objects.get(pk=response.json()["page_id"]).user_message == "Mail [email]"


def test_facts_and_profile_versions_say_where_they_stand_in_review(api, memory):
    knowledge = api.get(f"/api/v1/knowledge/{memory.knowledge.pk}/").json()
    versions = api.get("/api/v1/profile-versions/").json()["results"]

    assert knowledge["review_state"] == "approved"
    assert {v["review_state"] for v in versions} == {"approved"}
