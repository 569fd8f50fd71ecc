"""Query counts are pinned: the users list and the user memory page cost the same whatever the size of memory."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import Page
from tests import builders

USERS_LIST_QUERIES = 7  # session, user, membership, role; count, the page's ids, the rows with every figure
# 4 auth and access + the end user + the spaces + the tabs' counts + the short-term tab's pages + 3 for the audited
# read (lock, chain) + the legal hold; each tab's own count is pinned in test_case_view.py
USER_PAGE_QUERIES = 12


def test_the_users_list_costs_the_same_for_2_users_and_for_60(
    client, agent_user, tenant, alice_space, bob, django_assert_num_queries
):
    client.force_login(agent_user)
    with django_assert_num_queries(USERS_LIST_QUERIES):
        client.get("/console/acme/users/")

    builders.end_users(tenant, count=60)
    with django_assert_num_queries(USERS_LIST_QUERIES):
        client.get("/console/acme/users/", {"q": "u", "sort": "heat"})


def test_the_user_page_costs_the_same_for_small_and_large_memory(
    client, supervisor_user, alice, bob, assistant, django_capture_on_commit_callbacks, django_assert_num_queries
):
    builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks, rounds=1)
    builders.conversations(bob, assistant, capture=django_capture_on_commit_callbacks, rounds=4)
    assert Page.objects.filter(space__end_user=bob).count() == 4 * Page.objects.filter(space__end_user=alice).count()
    client.force_login(supervisor_user)

    with django_assert_num_queries(USER_PAGE_QUERIES):
        small = client.get(f"/console/acme/users/{alice.pk}/")
    with django_assert_num_queries(USER_PAGE_QUERIES):
        large = client.get(f"/console/acme/users/{bob.pk}/")

    assert small.status_code == large.status_code == 200
    assert large.context["tabs"][1][2] > small.context["tabs"][1][2]  # more segments, as many queries


def _subplan_loops(plan: dict) -> list[int]:
    """How often each correlated subquery of an EXPLAIN (ANALYZE, FORMAT JSON) plan ran."""
    loops = [plan["Actual Loops"]] if plan.get("Subplan Name") else []
    for child in plan.get("Plans", []):
        loops += _subplan_loops(child)
    return loops


@pytest.mark.slow
def test_with_ten_thousand_users_the_per_row_figures_are_computed_for_the_shown_rows_only(
    client, agent_user, tenant, assistant
):
    builders.crowd(tenant, assistant, users=10_000)
    with connection.cursor() as cursor:  # the statistics autovacuum keeps in production (rows in a test never commit)
        cursor.execute("ANALYZE memory_enduser, memory_memoryspace, memory_segment, memory_page")
    client.force_login(agent_user)

    for params in ({}, {"q": "user 9"}, {"sort": "heat"}, {"page": 200}):
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/console/acme/users/", params).status_code == 200
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + queries.captured_queries[-1]["sql"])
            plan = cursor.fetchone()[0][0]
        loops = _subplan_loops(plan["Plan"])
        # Wall-clock time is about 6 ms for this SELECT; what must hold on any machine is the shape of the work.
        assert loops and max(loops) <= 25, (params, loops)
