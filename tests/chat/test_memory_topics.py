"""The end user's memory page lists topics without their turns; a topic's turns load when it is opened."""

from __future__ import annotations

import pytest

from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def logged_in(client, alice):
    client.force_login(alice.account)
    return client


@pytest.fixture
def other_space(bob, assistant):
    return builders.space_of(bob, assistant)


def test_the_memory_page_reads_no_turn_of_any_topic(logged_in, space, django_assert_max_num_queries):
    for i in range(30):
        builders.segment_with_pages(space, summary=f"topic {i}", messages=[f"old turn {i}-{n}" for n in range(20)])
    builders.turns(space, messages=[f"recent {n}" for n in range(25)])  # the latest 20 turns are listed apart

    with django_assert_max_num_queries(20):
        body = logged_in.get("/chat/ava/memory/").content.decode()

    assert "topic 29" in body and "old turn" not in body
    assert 'href="/chat/ava/memory/topics/' in body  # each topic opens its turns, with or without JavaScript


def test_a_topic_shows_its_turns_in_order_as_a_page_and_as_the_fragment_htmx_asks_for(logged_in, space):
    topic = builders.segment_with_pages(space, summary="sourdough", messages=["I bake bread", "<b>rye</b> too"])

    page = logged_in.get(f"/chat/ava/memory/topics/{topic.id}/").content.decode()
    fragment = logged_in.get(f"/chat/ava/memory/topics/{topic.id}/", **HTMX).content.decode()

    assert page.index("I bake bread") < page.index("&lt;b&gt;rye&lt;/b&gt; too") and "<h1" in page
    assert "I bake bread" in fragment and "<h1" not in fragment


def test_another_users_topic_is_not_found(logged_in, other_space):
    topic = builders.segment_with_pages(other_space, summary="secret", messages=["bob's own turn"])

    assert logged_in.get(f"/chat/ava/memory/topics/{topic.id}/").status_code == 404
