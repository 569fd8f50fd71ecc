"""Searching one user's pages by words (the MCP search tool): narrowed by the user's own search keys, decided on the
pages' words, with web-style queries (phrases, `or`, `-word`)."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.selectors.items import page_search
from memory.services.tenancy import assistant_create
from tests import builders


@pytest.fixture
def pages(space):
    return {
        "bread": builders.page(space, user_message="Baking sourdough bread at home", assistant_reply="Lovely."),
        "rye": builders.page(space, user_message="Sourdough rye is denser", assistant_reply="True."),
        "hike": builders.page(space, user_message="Hiking with my dog", assistant_reply="Sounds fun."),
        "name": builders.page(space, user_message="I met O'Brien at the market", assistant_reply="Nice."),
    }


def found(space, text: str, **scope) -> set[str]:
    results = page_search(tenant=space.tenant, end_user=space.end_user, text=text, **scope)
    return {page.user_message for page in results}


def test_a_users_pages_holding_the_words_are_found_and_no_one_elses(space, pages, other_space):
    builders.page(other_space, user_message="Sourdough for Gus", assistant_reply="Sure.")
    assert found(space, "sourdough") == {"Baking sourdough bread at home", "Sourdough rye is denser"}
    assert found(space, "sourdough bread") == {"Baking sourdough bread at home"}
    assert found(space, "bread or dog") == {"Baking sourdough bread at home", "Hiking with my dog"}


def test_a_negated_word_leaves_out_its_pages(space, pages):
    assert found(space, "sourdough -rye") == {"Baking sourdough bread at home"}
    assert "Hiking with my dog" in found(space, "dog or -sourdough")  # a query the words alone cannot narrow


def test_a_word_with_an_apostrophe_and_a_query_of_stopwords_only(space, pages):
    assert found(space, "O'Brien") == {"I met O'Brien at the market"}
    assert found(space, "the and of") == set()


def test_only_the_named_assistants_pages_with_an_assistant(space, pages):
    other = assistant_create(tenant=space.tenant, external_id="max", name="Max")
    builders.page(builders.space_of(space.end_user, other), user_message="Sourdough with Max", assistant_reply="Ok.")
    assert "Sourdough with Max" in found(space, "sourdough")
    assert found(space, "sourdough", assistant=other) == {"Sourdough with Max"}


def test_colliding_keys_never_find_a_page_without_the_words(space, pages, other_space):
    builders.page(other_space, user_message="Sourdough for Gus", assistant_reply="Sure.")
    with connection.cursor() as cursor:  # the worst collisions: every key of every space answers every query
        cursor.execute(
            "CREATE OR REPLACE FUNCTION memory_search_keys(space bigint, document tsvector) RETURNS integer[]"
            " LANGUAGE sql IMMUTABLE AS $$ SELECT ARRAY(SELECT DISTINCT unnest(search_keys) FROM memory_page) $$"
        )
    assert found(space, "sourdough") == {"Baking sourdough bread at home", "Sourdough rye is denser"}


def test_a_search_takes_two_queries(space, pages, django_assert_num_queries):
    tenant, end_user = space.tenant, space.end_user
    with django_assert_num_queries(2):  # the query's keys, then the pages with their space, user and assistant
        assert len(page_search(tenant=tenant, end_user=end_user, text="sourdough bread")) == 1
