"""The users list: search by name, email, external id or id; per-row tier sizes, hottest heat, last activity."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.heat import segment_heat
from memory.models import Segment
from memory.selectors.console import end_users_search
from memory.services.tenancy import end_user_create
from tests import builders
from tests.dashboard.conftest import HX

URL = "/console/acme/users/"


def test_it_lists_each_user_with_tier_sizes_hottest_heat_and_last_activity(client, agent_user, alice_space, bob):
    client.force_login(agent_user)

    response = client.get(URL)

    rows = {row.external_id: row for row in response.context["page"].object_list}
    assert set(rows) == {"alice", "bob"}
    alice = rows["alice"]
    assert (alice.stm_pages, alice.segments, alice.mtm_pages) == (7, 4, 5)
    assert (alice.user_knowledge_count, alice.assistant_knowledge_count) == (5, 0) and alice.has_profile
    assert rows["bob"].stm_pages == 0 and rows["bob"].hottest_heat is None
    body = response.content.decode()
    assert "Alice" in body and "7 pages" in body and "4 segments" in body and "5 facts" in body


def test_its_fact_counts_agree_with_the_overview_s_user_knowledge(client, agent_user, alice, alice_space, assistant):
    builders.knowledge(alice, text="Ava booked a table for two at Tasca.", assistant=assistant)
    client.force_login(agent_user)

    rows = client.get(URL).context["page"].object_list
    tiles = client.get("/console/acme/").context["overview"].tiers

    assert sum(row.user_knowledge_count for row in rows) == tiles["User knowledge"] == 5
    assert sum(row.assistant_knowledge_count for row in rows) == tiles["Assistant knowledge"] == 1
    body = client.get(URL).content.decode()
    assert "5 facts" in body and "1 about the assistant" in body


def test_the_hottest_heat_in_sql_equals_the_heat_formula(tenant, alice_space):
    now = timezone.now() + timedelta(days=3)
    builders.heat_set(Segment.objects.filter(space=alice_space).first(), n_visit=4)

    row = end_users_search(tenant=tenant, query="alice", now=now).get()

    expected = max(segment_heat(s, now).value for s in Segment.objects.filter(space=alice_space))
    assert row.hottest_heat == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("query", ["Alic", "ALICE", "alice@example.com", "ali"])
def test_it_finds_users_by_name_email_or_external_id(client, agent_user, tenant, bob, query):
    end_user_create(tenant=tenant, external_id="ali-123", display_name="Alice Martin", email="alice@example.com")
    client.force_login(agent_user)

    rows = client.get(URL, {"q": query}).context["page"].object_list

    assert [r.display_name for r in rows] == ["Alice Martin"]


def test_it_finds_a_user_by_their_id(client, agent_user, alice, bob):
    client.force_login(agent_user)

    rows = client.get(URL, {"q": str(bob.pk)}).context["page"].object_list

    assert [r.pk for r in rows] == [bob.pk]


@pytest.mark.parametrize("query", ["²", "٣", "9" * 40])
def test_a_query_that_only_looks_numeric_is_searched_as_text(client, agent_user, alice, query):
    client.force_login(agent_user)

    response = client.get(URL, {"q": query})

    assert response.status_code == 200 and list(response.context["page"].object_list) == []


def test_other_tenants_users_are_never_listed(client, agent_user, alice, stranger):
    client.force_login(agent_user)

    rows = client.get(URL, {"q": "stranger"}).context["page"].object_list

    assert list(rows) == []
    assert "No user matches" in client.get(URL, {"q": "stranger"}).content.decode()


def test_it_sorts_by_heat_and_by_name(client, agent_user, alice_space, bob):
    client.force_login(agent_user)

    by_heat = [r.external_id for r in client.get(URL, {"sort": "heat"}).context["page"].object_list]
    by_name = [r.external_id for r in client.get(URL, {"sort": "name"}).context["page"].object_list]

    assert by_heat == ["alice", "bob"]
    assert by_name == ["alice", "bob"]


def test_it_pages_through_many_users(client, agent_user, tenant):
    builders.end_users(tenant, count=60)
    client.force_login(agent_user)

    page3 = client.get(URL, {"page": 3}).context["page"]

    assert page3.paginator.num_pages == 3 and len(page3.object_list) == 10
    assert "Page 3 of 3" in client.get(URL, {"page": 3}).content.decode()


def test_without_htmx_it_renders_the_whole_page(client, agent_user, alice):
    client.force_login(agent_user)

    body = client.get(URL, {"q": "ali"}).content.decode()

    assert "<html" in body and 'id="results"' in body and "<form" in body


def test_with_htmx_it_renders_only_the_results(client, agent_user, alice):
    client.force_login(agent_user)

    body = client.get(URL, {"q": "ali"}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="results">')
    assert "<html" not in body and "Alice" in body


def test_the_empty_state_says_how_users_appear(client, agent_user):
    client.force_login(agent_user)

    assert "No end users yet" in client.get(URL).content.decode()


def test_an_operator_of_another_tenant_gets_404_and_anonymous_visitors_log_in(client, other_operator, tenant):
    assert client.get(URL)["Location"].startswith("/accounts/login/")
    client.force_login(other_operator)

    assert client.get(URL).status_code == 404
