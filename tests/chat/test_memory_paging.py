"""The end user's memory page shows a page of each list that grows (topics, facts, earlier profile versions) at a
time, with a pager that works as plain links and with HTMX; its counts stay the true totals, its cost stays the same
however much is remembered, and an action taken on a later page comes back to that page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from memory.models import KnowledgeEntry
from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}
HOUR = timedelta(hours=1)


@pytest.fixture
def logged_in(client, alice):
    client.force_login(alice.account)
    return client


def remember(space, alice, assistant, *, topics: int, facts: int, versions: int = 1, first: int = 0) -> None:
    """`topics` topics (the higher the number, the later talked about), `facts` facts (every third one about what
    the assistant did; the higher the number, the newer) and `versions` profile versions, numbered from `first`."""
    for i in range(first, first + topics):
        builders.segment_with_pages(
            space, summary=f"Holiday plan {i:02d}", messages=[f"turn of plan {i:02d}"], at=builders.T0 + i * HOUR
        )
    for i in range(first, first + facts):
        builders.knowledge(alice, text=f"Remembered fact {i:02d}.", assistant=assistant if i % 3 == 0 else None)
    for i in range(first, first + versions):
        builders.profile(alice, text=f"Profile version {i + 1:02d}.")


def listed(body: str, topic: int) -> bool:
    """Whether the topics list shows the topic numbered `topic` (recent turns name their topic too)."""
    return f'<p class="memory-text" dir="auto">Holiday plan {topic:02d}</p>' in body


@pytest.fixture
def full(space, alice, assistant):
    """More than a page of everything: 30 topics, 30 facts, 30 profile versions."""
    remember(space, alice, assistant, topics=30, facts=30, versions=30)


def test_the_first_page_shows_the_latest_10_topics_and_newest_10_facts_with_the_true_totals(logged_in, full):
    body = logged_in.get("/chat/ava/memory/").content.decode()

    assert listed(body, 29) and listed(body, 20) and not listed(body, 19)
    assert "Remembered fact 29." in body and "Remembered fact 20." in body and "Remembered fact 19." not in body
    assert "30 topics" in body and "30 facts" in body and "Earlier versions (29)" in body
    assert "Profile version 30." in body and "Profile version 20." in body and "Profile version 19." not in body


def test_each_pager_is_a_labelled_nav_of_plain_links_with_previous_next_and_page_numbers(logged_in, full):
    body = logged_in.get("/chat/ava/memory/").content.decode()

    for label, param in (("Pages of topics", "topics"), ("Pages of facts", "facts")):
        assert f'<nav class="pagination" aria-label="{label}"' in body
        assert f'href="/chat/ava/memory/?{param}=2"' in body and f'hx-get="/chat/ava/memory/?{param}=2"' in body
    assert 'aria-current="page"' in body and "Older topics →" in body and "Older facts →" in body
    assert "← Newer topics" not in body  # nothing before the first page


def test_a_later_page_shows_the_rest_and_its_links_keep_the_other_lists_pages(logged_in, full):
    body = logged_in.get("/chat/ava/memory/", {"topics": 3, "facts": 3}).content.decode()

    assert listed(body, 9) and listed(body, 0) and not listed(body, 10)
    assert "Remembered fact 09." in body and "Remembered fact 10." not in body
    assert "30 topics" in body and "30 facts" in body
    assert 'href="/chat/ava/memory/?topics=1&amp;facts=3"' in body  # back to the first topics, facts stay
    assert 'href="/chat/ava/memory/?topics=3&amp;facts=1"' in body


@pytest.mark.parametrize(
    ("asked", "shown"),
    [("abc", "Holiday plan 29"), ("", "Holiday plan 29"), ("1.5", "Holiday plan 29"), ("99", "Holiday plan 00")],
    ids=["malformed", "empty", "not-whole", "past-the-end"],
)
def test_a_malformed_page_number_gives_the_first_page_and_one_past_the_end_the_last(logged_in, full, asked, shown):
    response = logged_in.get("/chat/ava/memory/", {"topics": asked})

    assert response.status_code == 200 and shown in response.content.decode()


def test_the_page_costs_the_same_queries_on_any_page_however_much_is_remembered(
    logged_in, space, alice, assistant, django_assert_num_queries
):
    # session, user, end user, assistant, space, latest turns, profile, then a count and a page of rows for each
    # of the earlier versions, the facts and the topics (a topic's turns are read when it is opened),
    # and the legal hold
    remember(space, alice, assistant, topics=30, facts=30, versions=30)
    with django_assert_num_queries(14):
        logged_in.get("/chat/ava/memory/")
    remember(space, alice, assistant, topics=40, facts=40, versions=40, first=30)
    with django_assert_num_queries(14):
        logged_in.get("/chat/ava/memory/", {"topics": 3, "facts": 3, "versions": 3})


def test_htmx_paging_gets_the_pages_body_alone_and_a_plain_request_the_whole_page(logged_in, full):
    fragment = logged_in.get("/chat/ava/memory/", {"topics": 3}, **HTMX).content.decode()
    page = logged_in.get("/chat/ava/memory/", {"topics": 3}).content.decode()

    assert fragment.lstrip().startswith('<div id="memory-body"') and "Holiday plan 00" in fragment
    assert "<h1" not in fragment and "<h1" in page and "Holiday plan 00" in page


def test_earlier_profile_versions_are_paged_and_paging_them_keeps_them_open(logged_in, full):
    body = logged_in.get("/chat/ava/memory/", {"versions": 3}).content.decode()
    back = logged_in.get("/chat/ava/memory/", {"versions": 1}).content.decode()
    unasked = logged_in.get("/chat/ava/memory/").content.decode()

    assert "Profile version 09." in body and "Profile version 01." in body and "Profile version 10." not in body
    assert "Profile version 30." in body  # the current version is always shown
    opened = '<details class="earlier" id="earlier-versions" open>'
    assert opened in body and opened in back and opened not in unasked


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_forgetting_a_fact_on_a_later_page_comes_back_to_that_page(logged_in, full, headers):
    entry = KnowledgeEntry.objects.get(text="Remembered fact 02.")

    response = logged_in.post(f"/chat/ava/memory/facts/{entry.id}/forget/?facts=3&topics=3", **headers)

    assert not KnowledgeEntry.objects.filter(pk=entry.pk).exists()
    if headers:
        body = response.content.decode()
        assert "Forgotten: that fact." in body and "Remembered fact 01." in body and "Holiday plan 00" in body
        assert "29 facts" in body
    else:
        assert response.status_code == 302 and response["Location"] == "/chat/ava/memory/?facts=3&topics=3"


def test_the_delete_question_and_its_keep_it_link_carry_the_pages_being_read(logged_in, full):
    entry = KnowledgeEntry.objects.get(text="Remembered fact 02.")
    listed = logged_in.get("/chat/ava/memory/", {"facts": 3}).content.decode()

    question = logged_in.get(f"/chat/ava/memory/facts/{entry.id}/forget/confirm/?facts=3").content.decode()

    assert f'href="/chat/ava/memory/facts/{entry.id}/forget/confirm/?facts=3"' in listed
    assert f'action="/chat/ava/memory/facts/{entry.id}/forget/?facts=3"' in question
    assert 'href="/chat/ava/memory/?facts=3"' in question


def test_correcting_a_fact_on_a_later_page_comes_back_to_that_page(logged_in, full):
    entry = KnowledgeEntry.objects.get(text="Remembered fact 02.")

    response = logged_in.post(f"/chat/ava/memory/facts/{entry.id}/correct/?facts=3", {"text": "Corrected fact."})

    assert response["Location"] == "/chat/ava/memory/?facts=3"
    assert "Corrected fact." in logged_in.get(response["Location"]).content.decode()


def test_a_page_of_one_list_or_none_shows_no_pager(logged_in, space, alice, assistant):
    remember(space, alice, assistant, topics=3, facts=10)

    body = logged_in.get("/chat/ava/memory/").content.decode()

    assert "3 topics" in body and "10 facts" in body and 'class="pagination"' not in body


def test_a_topic_opened_from_a_later_page_links_back_to_that_page(logged_in, full):
    listed = logged_in.get("/chat/ava/memory/", {"topics": 3}).content.decode()
    topic_url = re.search(r'href="(/chat/ava/memory/topics/\d+/\?topics=3)"', listed).group(1)

    topic = logged_in.get(topic_url).content.decode()

    assert re.search(r'href="/chat/ava/memory/\?topics=3#topic-\d+"', topic)
