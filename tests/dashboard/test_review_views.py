"""The console's review queue: pending facts and profile versions with their source turns; approve, edit and approve,
or reject with a reason, each audited; dpo and admin only."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, ProfileVersion, ReviewState
from tests import builders

QUEUE = "/console/acme/review/"


def held(item):
    type(item).objects.filter(pk=item.pk).update(review_state=ReviewState.PENDING)
    item.refresh_from_db()
    return item


@pytest.fixture
def pending(alice, assistant):
    space = builders.space_of(alice, assistant)
    source = builders.page(space, user_message="My therapist helps with my anxiety.", assistant_reply="Good to hear.")
    fact = held(builders.knowledge(alice, text="The user sees a therapist.", source_pages=[source]))
    version = held(builders.profile(alice, text="Alice sees a therapist."))
    return fact, version


@pytest.mark.parametrize("persona", ["dpo_user", "admin_user"])
def test_the_queue_lists_pending_items_with_their_source_turns(
    client, persona, request, pending, django_assert_max_num_queries
):
    client.force_login(request.getfixturevalue(persona))
    builders.knowledge(pending[0].end_user, text="The user likes tea.")  # approved: not in the queue

    with django_assert_max_num_queries(12):
        body = client.get(QUEUE).content.decode()

    assert "The user sees a therapist." in body and "Alice sees a therapist." in body
    assert "My therapist helps with my anxiety." in body  # the source turn
    assert "likes tea" not in body
    assert f'id="review-knowledge-{pending[0].pk}"' in body and f'id="review-profile-{pending[1].pk}"' in body


@pytest.mark.parametrize("persona", ["agent_user", "supervisor_user"])
def test_agents_and_supervisors_may_not_review(client, persona, request, pending):
    client.force_login(request.getfixturevalue(persona))

    assert client.get(QUEUE).status_code == 403
    assert client.post(f"{QUEUE}knowledge/{pending[0].pk}/", {"decision": "approve"}).status_code == 403
    assert KnowledgeEntry.objects.get(pk=pending[0].pk).review_state == ReviewState.PENDING


def test_approving_a_fact_from_the_queue(client, dpo_user, pending):
    client.force_login(dpo_user)

    response = client.post(f"{QUEUE}knowledge/{pending[0].pk}/", {"decision": "approve"})

    assert response.status_code == 302 and response["Location"] == f"{QUEUE}#pending-facts"  # no fact waits after it
    assert KnowledgeEntry.objects.get(pk=pending[0].pk).review_state == ReviewState.APPROVED
    assert AuditEntry.objects.get(action="knowledge.approve").actor_label == dpo_user.username


def test_editing_and_approving_a_profile_version_from_the_queue(client, dpo_user, pending):
    client.force_login(dpo_user)

    client.post(f"{QUEUE}profile/{pending[1].pk}/", {"decision": "approve", "text": "Alice bakes.", "reason": "tone"})

    version = ProfileVersion.objects.get(pk=pending[1].pk)
    assert (version.text, version.review_state) == ("Alice bakes.", ReviewState.APPROVED)


def test_rejecting_without_a_reason_changes_nothing_and_says_why(client, dpo_user, pending):
    client.force_login(dpo_user)

    response = client.post(f"{QUEUE}knowledge/{pending[0].pk}/", {"decision": "reject"}, follow=True)

    assert "Nothing was changed: a reason is required." in response.content.decode()
    assert KnowledgeEntry.objects.get(pk=pending[0].pk).review_state == ReviewState.PENDING
    client.post(f"{QUEUE}knowledge/{pending[0].pk}/", {"decision": "reject", "reason": "health data"})
    assert KnowledgeEntry.objects.get(pk=pending[0].pk).review_state == ReviewState.REJECTED


def test_another_tenants_item_is_404(client, dpo_user, stranger):
    fact = held(builders.knowledge(stranger, text="A stranger's fact."))
    client.force_login(dpo_user)

    assert client.post(f"{QUEUE}knowledge/{fact.pk}/", {"decision": "approve"}).status_code == 404
    assert client.post(f"{QUEUE}elsewhere/{fact.pk}/", {"decision": "approve"}).status_code == 404


def test_the_console_marks_pending_items_on_the_users_page(client, agent_user, alice, pending):
    client.force_login(agent_user)

    body = client.get(f"/console/acme/users/{alice.pk}/?tab=long-term").content.decode()

    assert "awaiting review" in body


def test_the_end_user_sees_a_pending_fact_marked_as_such(client, alice, pending):
    from tests.conftest import PASSWORD

    assert client.login(username="alice", password=PASSWORD)

    body = client.get("/chat/ava/memory/").content.decode()

    assert "The user sees a therapist." in body and "Pending review: not used in answers yet" in body
    assert "does not use this version until it is approved" in body
