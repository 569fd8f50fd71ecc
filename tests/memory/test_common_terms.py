"""The words most pages hold add weight to the pages a question's rarer words find, and find none of their own."""

from __future__ import annotations

import math

import numpy as np
import pytest
from django.db import connection

from memory.retrieval import channels, common_terms, rows
from memory.retrieval.common_terms import CommonTerms, common_terms_read, common_terms_set
from tests import builders

pytestmark = pytest.mark.django_db

COMMON = CommonTerms(lexemes=("coffe",), shares=(0.5,))  # "coffee" as the english configuration stems it
MORNINGS = 40  # pages about coffee alone: Zanzibar's two pages are under COMMON_SHARE of the 43
STORED = MORNINGS + 3


@pytest.fixture
def pages(space):
    """Forty pages about coffee, one about Zanzibar and coffee, one about Zanzibar alone, one about tea."""
    for i in range(MORNINGS):
        builders.page(space, user_message=f"morning coffee number {i}", assistant_reply="Enjoy.")
    both = builders.page(space, user_message="coffee grown in Zanzibar", assistant_reply="Spicy.")
    rare = builders.page(space, user_message="a trip to Zanzibar", assistant_reply="Lovely.")
    tea = builders.page(space, user_message="green tea", assistant_reply="Calm.")
    return {"both": both, "rare": rare, "tea": tea}


def _words(space, terms: list[str], common: CommonTerms) -> dict[int, tuple]:
    """The words channel's rows for `terms`: page id -> (flags of the terms held, weight, mass)."""
    with connection.cursor() as cursor:
        params = channels.lexical_params(space, terms, rows.vector_text(np.zeros(256)), common)
        cursor.execute(channels.lexical_sql(len(terms)), params)
        found = cursor.fetchall()
    n = len(terms)
    return {row[0]: (tuple(row[2 : 2 + n]), row[2 + n], row[4 + n]) for row in found}


def _idf(stored: int, holding: float) -> float:
    return math.log(1 + (stored - holding + 0.5) / (holding + 0.5))


def test_with_a_rarer_word_in_the_question_a_common_word_finds_no_page_of_its_own(space, pages):
    found = _words(space, ["coffee", "zanzibar"], COMMON)
    assert set(found) == {pages["both"].id, pages["rare"].id}


def test_a_common_word_adds_its_weight_estimated_from_its_share_to_the_pages_the_rarer_word_found(space, pages):
    found = _words(space, ["coffee", "zanzibar"], COMMON)
    coffee, zanzibar = _idf(STORED, 0.5 * STORED), _idf(STORED, 2)
    assert found[pages["both"].id] == (
        (1, 1),
        pytest.approx(coffee + zanzibar),
        pytest.approx(coffee + zanzibar),
    )
    assert found[pages["rare"].id][:2] == ((0, 1), pytest.approx(zanzibar))


def test_a_question_of_common_words_alone_finds_every_page_that_holds_them(space, pages):
    found = _words(space, ["coffee"], COMMON)
    assert len(found) == MORNINGS + 1 and pages["rare"].id not in found
    assert {flags for flags, _, _ in found.values()} == {(1,)}


def test_without_common_words_every_word_finds_its_pages_counted_exactly(space, pages):
    found = _words(space, ["coffee", "zanzibar"], CommonTerms())
    assert len(found) == MORNINGS + 2
    assert found[pages["both"].id][1] == pytest.approx(_idf(STORED, MORNINGS + 1) + _idf(STORED, 2))


def test_a_stopword_of_postgresql_is_no_rarer_word(space, pages):
    """A word PostgreSQL drops (it parses to nothing) must not stand for the rare word that keeps common words out."""
    found = _words(space, ["coffee", "the"], COMMON)
    assert len(found) == MORNINGS + 1


def test_retrieval_explains_a_page_found_by_both_words(space, pages):
    from memory.retrieval.search import retrieve

    common_terms_set(COMMON)
    result = retrieve(space=space, query="coffee from zanzibar", record_visits=False)
    words = {p.page.id: p.found_by.get("words") for p in result.ranked}
    assert words[pages["both"].id] == ["coffee", "zanzibar"]
    assert words[pages["rare"].id] == ["zanzibar"]


def test_the_common_words_are_read_from_the_tables_statistics(space, pages):
    assert common_terms_read() == CommonTerms()  # before ANALYZE there are none: every word finds its pages
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_page")
    read = common_terms_read()
    assert "coffe" in read.lexemes and "zanzibar" not in read.lexemes and "tea" not in read.lexemes
    assert read.shares[read.lexemes.index("coffe")] == pytest.approx((MORNINGS + 1) / STORED, abs=0.01)


def test_the_list_is_read_again_only_once_it_is_older_than_the_refresh_interval(monkeypatch, django_assert_num_queries):
    clock = [1000.0]
    monkeypatch.setattr(common_terms.time, "monotonic", lambda: clock[0])
    common_terms.common_terms_forget()
    with django_assert_num_queries(1):
        common_terms.common_terms()
        common_terms.common_terms()
    clock[0] += common_terms.REFRESH_SECONDS - 1
    with django_assert_num_queries(0):
        common_terms.common_terms()
    clock[0] += 2
    with django_assert_num_queries(1):
        common_terms.common_terms()
