"""The end user searches their own memory from the memory page: facts, topics, turns and profile versions that hold
the words, from their memory with this assistant only, with the controls they have on the page."""

from __future__ import annotations

import pytest

from memory.models import KnowledgeEntry
from memory.services.tenancy import assistant_create
from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def logged_in(client, alice):
    client.force_login(alice.account)
    return client


@pytest.fixture
def lisbon(space, alice, assistant):
    """Alice's memory with Ava that mentions Lisbon in every kind of item, and some that does not."""
    builders.knowledge(alice, text="Alice loves Lisbon.")
    builders.knowledge(alice, text="Alice is vegetarian.")
    builders.segment_with_pages(space, summary="Lisbon holiday in May", messages=["Is Sintra worth a day?"])
    builders.segment_with_pages(space, summary="Sourdough baking", messages=["My starter died."])
    builders.page(space, user_message="We land in Lisbon at noon.")
    builders.profile(alice, text="Alice lives in York.")
    builders.profile(alice, text="Alice lives in Leeds and travels to Lisbon often.")


def test_a_search_shows_the_users_own_items_that_hold_the_words_instead_of_the_lists(logged_in, lisbon):
    body = logged_in.get("/chat/ava/memory/", {"q": "lisbon"}).content.decode()

    assert 'Found for “<span dir="auto">lisbon</span>”' in body and "4 items" in body
    assert "Alice loves Lisbon." in body and "Lisbon holiday in May" in body and "We land in Lisbon at noon." in body
    assert "Alice lives in Leeds and travels to Lisbon often." in body
    assert "Alice is vegetarian." not in body and "Sourdough baking" not in body
    assert 'value="lisbon"' in body  # the box keeps what was looked for


def test_a_search_never_finds_another_users_memory_nor_the_users_memory_with_another_assistant(
    logged_in, lisbon, alice, bob, assistant, tenant
):
    bobs = builders.space_of(bob, assistant)
    builders.knowledge(bob, text="Bob moved to Lisbon.")
    builders.segment_with_pages(bobs, summary="Lisbon flat hunting", messages=["Bob's Lisbon flat"])
    max_assistant = assistant_create(tenant=tenant, external_id="max", name="Max")
    builders.knowledge(alice, text="Max booked a Lisbon hotel.", assistant=max_assistant)
    builders.segment_with_pages(builders.space_of(alice, max_assistant), summary="Lisbon with Max")

    body = logged_in.get("/chat/ava/memory/", {"q": "Lisbon"}).content.decode()

    assert "Alice loves Lisbon." in body
    assert "Bob" not in body and "Max booked" not in body and "Lisbon with Max" not in body


def test_a_search_that_finds_nothing_says_so(logged_in, lisbon):
    body = logged_in.get("/chat/ava/memory/", {"q": "Kyoto"}).content.decode()

    assert "Nothing Ava remembers matches it." in body and "Alice loves Lisbon." not in body


def test_a_blank_search_shows_the_lists(logged_in, lisbon):
    body = logged_in.get("/chat/ava/memory/", {"q": "   "}).content.decode()

    assert "Found for" not in body and "Alice is vegetarian." in body and "Sourdough baking" in body


def test_htmx_gets_the_results_as_the_pages_body(logged_in, lisbon):
    fragment = logged_in.get("/chat/ava/memory/", {"q": "lisbon"}, **HTMX).content.decode()

    assert fragment.lstrip().startswith('<div id="memory-body"') and "<h1" not in fragment
    assert "Alice loves Lisbon." in fragment


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_forgetting_a_found_fact_comes_back_to_the_search(logged_in, lisbon, headers):
    entry = KnowledgeEntry.objects.get(text="Alice loves Lisbon.")
    listed = logged_in.get("/chat/ava/memory/", {"q": "lisbon"}).content.decode()
    assert f'href="/chat/ava/memory/facts/{entry.id}/forget/confirm/?q=lisbon"' in listed

    response = logged_in.post(f"/chat/ava/memory/facts/{entry.id}/forget/?q=lisbon", **headers)

    assert not KnowledgeEntry.objects.filter(pk=entry.pk).exists()
    if headers:
        body = response.content.decode()
        assert "Forgotten: that fact." in body and "Found for" in body and "3 items" in body
    else:
        assert response["Location"] == "/chat/ava/memory/?q=lisbon"


def test_a_search_costs_six_queries_more_than_the_page(logged_in, lisbon, django_assert_num_queries):
    # the page's 14 (its legal hold included), then the query's stem prefixes and retrieval's one batch (the turns
    # found by words and meaning, memory.selectors.search), then pages, topics, facts and profile versions found
    with django_assert_num_queries(14 + 6):
        logged_in.get("/chat/ava/memory/", {"q": "lisbon"})
