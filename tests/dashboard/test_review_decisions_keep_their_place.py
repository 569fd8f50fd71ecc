"""A review decision keeps the reviewer's place: with HTMX the decided row is swapped in place (saying what a rejection
also removed), without it the queue is shown again at the row that took its place; a pending profile version shows
its diff against the current profile; a fact may be rejected with its source turns forgotten, after a preview."""

from __future__ import annotations

import pytest

from memory.models import KnowledgeEntry, Page, ProfileVersion, ReviewState
from memory.steps.offline_steps import PROFILE_HEADER
from tests import builders

QUEUE = "/console/acme/review/"
HTMX = {"HTTP_HX_REQUEST": "true"}
THERAPIST = "The user sees a therapist."


def held(item):
    type(item).objects.filter(pk=item.pk).update(review_state=ReviewState.PENDING)
    item.refresh_from_db()
    return item


@pytest.fixture
def queue(alice, assistant, dpo_user, client):
    """Two pending facts (the first learnt from a turn) and a pending profile version stating the first."""
    client.force_login(dpo_user)
    space = builders.space_of(alice, assistant)
    source = builders.page(space, user_message="My therapist helps with my anxiety.")
    first = held(builders.knowledge(alice, text=THERAPIST, source_pages=[source]))
    second = held(builders.knowledge(alice, text="The user likes jazz."))
    builders.profile(alice, text=f"{PROFILE_HEADER}\n- The user likes tea.")
    version = held(builders.profile(alice, text=f"{PROFILE_HEADER}\n- The user likes tea.\n- {THERAPIST}"))
    return first, second, version, source


def test_the_queue_shows_a_pending_version_against_the_current_profile_escaped(client, queue):
    ProfileVersion.objects.filter(pk=queue[2].pk).update(text=f"{PROFILE_HEADER}\n- <b>bold</b> tea")

    body = client.get(QUEUE).content.decode()

    assert '<div class="diff-line diff-delete"><del>− - The user likes tea.</del></div>' in body
    assert '<div class="diff-line diff-insert"><ins>+ - &lt;b&gt;bold&lt;/b&gt; tea</ins></div>' in body


def test_a_plain_rejection_redirects_to_the_row_that_takes_its_place(client, queue):
    first, second, *_ = queue

    response = client.post(f"{QUEUE}knowledge/{first.pk}/", {"decision": "reject", "reason": "health"})

    assert response.status_code == 302 and response["Location"] == f"{QUEUE}#review-knowledge-{second.pk}"
    assert KnowledgeEntry.objects.get(pk=first.pk).review_state == ReviewState.REJECTED


def test_an_htmx_rejection_swaps_the_row_and_says_what_left_the_profile(client, queue):
    first, _, version, source = queue

    response = client.post(f"{QUEUE}knowledge/{first.pk}/", {"decision": "reject", "reason": "health"}, **HTMX)

    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert body.strip().startswith(f'<article class="card review-item decided" id="review-knowledge-{first.pk}"')
    assert "This rejection also removes from the profile" in body and f"<del>- {THERAPIST}</del>" in body
    assert "1 source turn withheld from replies" in body
    assert THERAPIST not in ProfileVersion.objects.get(pk=version.pk).text
    assert Page.objects.get(pk=source.pk).withheld


def test_an_htmx_decision_that_fails_says_so_in_the_row(client, queue):
    response = client.post(f"{QUEUE}knowledge/{queue[0].pk}/", {"decision": "reject"}, **HTMX)

    assert "Nothing was changed: a reason is required." in response.content.decode()
    assert KnowledgeEntry.objects.get(pk=queue[0].pk).review_state == ReviewState.PENDING


def test_the_reject_preview_is_a_page_or_the_row_alone(client, queue):
    url = f"{QUEUE}knowledge/{queue[0].pk}/reject/"

    page, row = client.get(url).content.decode(), client.get(url, **HTMX).content.decode()

    assert "<html" in page and "<html" not in row
    for body in (page, row):
        assert "withheld from replies" in body and "removes from the profile" in body
        assert "Reject and forget the source turns" in body and "removes 1 turn" in body
    assert KnowledgeEntry.objects.get(pk=queue[0].pk).review_state == ReviewState.PENDING


def test_reject_and_forget_from_the_queue_deletes_the_source_turns(client, queue):
    first, _, _, source = queue

    response = client.post(f"{QUEUE}knowledge/{first.pk}/", {"decision": "reject_forget", "reason": "health"})

    assert response.status_code == 302
    assert not Page.objects.filter(pk=source.pk).exists()
