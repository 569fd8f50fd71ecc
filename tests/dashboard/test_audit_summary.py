"""Above the audit log, a summary of the filtered entries: reads in one line per actor, other actions counted."""

from __future__ import annotations

import pytest

from memory.services.audit import Actor
from memory.services.governance import memory_flag_set, memory_read_record

URL = "/console/acme/audit/"
# session, user, membership, role; the filter's actions; the summary; the count; the page's rows
AUDIT_LOG_QUERIES = 8


@pytest.fixture
def trail(alice, bob, alice_space):
    """Three reads by sam, one by kim, and two pins by kim."""
    from memory.models import KnowledgeEntry

    sam, kim = Actor("operator", "901", "sam"), Actor("operator", "902", "kim")
    for _ in range(3):
        memory_read_record(actor=sam, end_user=alice, what="user memory page")
    memory_read_record(actor=kim, end_user=bob, what="user memory page")
    for fact in KnowledgeEntry.objects.filter(end_user=alice)[:2]:
        memory_flag_set(item=fact, flag="pinned", value=True, actor=kim, reason="Keep it")


def test_reads_are_summarised_in_one_line_per_actor(client, dpo_user, trail):
    client.force_login(dpo_user)

    summary = client.get(URL).context["summary"]

    assert summary.reads == [("sam", 3), ("kim", 1)]
    assert summary.read_count == 4


def test_other_actions_are_counted_per_action_and_per_actor(client, dpo_user, trail):
    client.force_login(dpo_user)

    summary = client.get(URL).context["summary"]

    assert summary.actions == [("knowledge.pin", 2)]
    assert summary.actors == [("kim", 2)]


def test_the_summary_reads_as_words_above_the_list(client, dpo_user, trail):
    client.force_login(dpo_user)

    body = client.get(URL).content.decode()

    assert "4 reads by sam (3), kim (1)" in body
    assert "Pinned a fact (2)" in body
    assert body.index("4 reads by") < body.index("<table")


def test_the_summary_counts_only_the_filtered_range(client, dpo_user, trail):
    client.force_login(dpo_user)

    summary = client.get(URL, {"actor": "sam"}).context["summary"]

    assert summary.reads == [("sam", 3)] and summary.actions == []


def test_the_audit_log_costs_the_same_for_few_and_many_entries(
    client, dpo_user, alice, trail, django_assert_num_queries
):
    client.force_login(dpo_user)
    with django_assert_num_queries(AUDIT_LOG_QUERIES):
        client.get(URL)

    for number in range(60):
        memory_read_record(actor=Actor("operator", str(number), f"op{number}"), end_user=alice, what="a page")
    with django_assert_num_queries(AUDIT_LOG_QUERIES):
        client.get(URL, {"hide_reads": "on"})
