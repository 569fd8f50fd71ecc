"""The case view of one user: a tab per tier (short-term, mid-term, long-term), each read on its own and audited."""

from __future__ import annotations

import json
import re

from memory.models import AuditEntry, Segment
from memory.services.tenancy import assistant_create
from tests import builders
from tests.dashboard.conftest import HX


def url(end_user) -> str:
    return f"/console/acme/users/{end_user.pk}/"


def test_it_opens_on_short_term_memory_in_order_and_offers_every_tab(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    response = client.get(url(alice))

    short_term = response.context["short_term"]
    assert [p.seq for p in short_term] == sorted(p.seq for p in short_term) and len(short_term) == 7
    assert [key for key, _, _ in response.context["tabs"]] == ["short-term", "mid-term", "long-term", "chats"]
    body = response.content.decode()
    assert "Short-term memory" in body and "Mid-term memory" not in body and "Long-term personal memory" not in body
    assert 'role="tablist"' in body and 'role="tabpanel"' in body
    selected, other = 'id="case-tab-short-term" role="tab"', 'id="case-tab-mid-term" role="tab"'
    assert f'{selected} aria-controls="tab-short-term" class="is-active" aria-selected="true" tabindex="0"' in body
    assert f'{other} aria-controls="tab-short-term" aria-selected="false" tabindex="-1"' in body  # one tab stop
    assert f'href="{url(alice)}?tab=mid-term&amp;assistant=ava"' in body  # every tab is a plain link too


def test_the_mid_term_tab_shows_segments_with_their_heat_and_a_closed_chart_section(
    client, agent_user, alice, alice_space
):
    client.force_login(agent_user)

    response = client.get(url(alice), {"tab": "mid-term"})

    assert len(response.context["segments"].object_list) == 4
    body = response.content.decode()
    assert "Mid-term memory" in body and "N_visit" in body and "L_interaction" in body and "R_recency" in body
    assert 'id="user-heat"' not in body and 'hx-trigger="toggle once" hx-target="#heat-chart"' in body
    assert 'data-plotly-src="/static/vendor/plotly/plotly.min.js"' in body  # plots.js fetches it for a chart
    assert '<script src="/static/vendor/plotly/plotly.min.js"' not in body


def test_opening_the_chart_section_fetches_the_chart_alone(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    chart = client.get(url(alice), {"tab": "mid-term", "chart": "open"}, HTTP_HX_TARGET="heat-chart", **HX)
    page = client.get(url(alice), {"tab": "mid-term", "chart": "open"})

    body = chart.content.decode()
    assert body.lstrip().startswith('<div class="plot">') and 'id="user-heat"' in body and "<table" not in body
    assert '<details class="chart-section" open>' in page.content.decode()
    assert 'id="user-heat"' in page.content.decode()


def test_the_long_term_tab_shows_the_profile_and_knowledge(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    response = client.get(url(alice), {"tab": "long-term"})

    assert response.context["long_term"].profile is not None
    body = response.content.decode()
    assert "Long-term personal memory" in body and "Knowledge about the user" in body
    assert 'id="user-heat"' not in body


def test_an_htmx_request_gets_the_tab_alone(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    body = client.get(url(alice), {"tab": "long-term"}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="case">') and "<html" not in body
    assert "Long-term personal memory" in body and 'class="case-search"' not in body


def test_segments_are_sorted_by_heat_hottest_first(client, agent_user, alice, alice_space):
    coolest, *_, hottest = Segment.objects.filter(space=alice_space).order_by("id")
    builders.heat_set(hottest, n_visit=7)
    builders.heat_set(coolest, n_visit=3)
    client.force_login(agent_user)

    rows = client.get(url(alice), {"tab": "mid-term"}).context["segments"].object_list

    assert [r.segment.pk for r in rows[:2]] == [hottest.pk, coolest.pk]
    assert rows[0].heat.n_visit == 7 and rows[0].heat.value > rows[1].heat.value > rows[2].heat.value


def test_reading_each_tab_is_audited_as_a_read_of_that_tier(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    client.get(url(alice))
    client.get(url(alice), {"tab": "long-term"}, **HX)

    reads = AuditEntry.objects.filter(action="memory.read").order_by("seq")
    assert [r.detail for r in reads] == [{"what": "user memory: short-term"}, {"what": "user memory: long-term"}]
    assert {(r.subject_id, r.actor_label, r.target_id) for r in reads} == {(alice.pk, "agent-of-acme", alice_space.pk)}


def test_an_agent_sees_only_the_flag_button_and_a_supervisor_every_action(
    client, agent_user, supervisor_user, alice, alice_space
):
    client.force_login(agent_user)
    actions = set(re.findall(r'data-action="([a-z]+)"', client.get(url(alice), {"tab": "long-term"}).content.decode()))
    assert actions <= {"flag"}  # an agent hands an item on to a supervisor, and changes nothing itself

    client.force_login(supervisor_user)
    assert 'data-action="forget"' in client.get(url(alice)).content.decode()
    body = client.get(url(alice), {"tab": "long-term"}).content.decode()
    assert 'data-action="pin"' in body and 'data-action="forget"' in body and 'data-action="lock"' in body
    assert f"next={url(alice)}%3Ftab%3Dlong-term" in body  # after an action, the same tab again


def test_pending_pages_are_counted(client, agent_user, alice, assistant, django_capture_on_commit_callbacks):
    builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks, place=False)
    client.force_login(agent_user)

    assert "5 pages left short-term memory" in client.get(url(alice), {"tab": "mid-term"}).content.decode()


def test_a_user_without_memory_gets_a_clear_empty_state(client, agent_user, bob):
    client.force_login(agent_user)

    body = client.get(url(bob)).content.decode()

    assert "has not talked to an assistant yet" in body


def test_it_switches_between_the_users_assistants_and_keeps_the_tab(client, agent_user, tenant, alice, alice_space):
    max_ = assistant_create(tenant=tenant, external_id="max", name="Max")
    builders.page(builders.space_of(alice, max_), user_message="Hello Max, I like chess.")
    client.force_login(agent_user)

    response = client.get(url(alice), {"assistant": "max", "tab": "mid-term"})

    assert response.context["space"].assistant == max_ and not response.context["segments"].object_list
    body = response.content.decode()
    assert "Memory with" in body and '<input type="hidden" name="tab" value="mid-term">' in body
    assert len(client.get(url(alice), {"assistant": "max"}).context["short_term"]) == 1


def test_an_unknown_tab_falls_back_to_short_term_memory(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    assert client.get(url(alice), {"tab": "everything"}).context["tab"] == "short-term"


def test_another_tenants_user_is_404(client, agent_user, stranger):
    client.force_login(agent_user)

    assert client.get(url(stranger)).status_code == 404
    assert client.get(url(stranger), {"tab": "chats"}, **HX).status_code == 404
    assert client.get("/console/globex/users/").status_code == 404


def test_a_segment_summary_with_markup_is_a_plain_label_in_the_heat_chart(client, agent_user, alice, alice_space):
    builders.segment(alice_space, summary='<a href="//e.x">hi</a></script>', n_visit=3)
    client.force_login(agent_user)

    body = client.get(url(alice), {"tab": "mid-term", "chart": "open"}).content.decode()

    start = body.index('data-plotly-for="user-heat"')
    chart = body[start : body.index("</script>", start)].lower()
    figure = json.loads(chart[chart.index(">") + 1 :])
    assert "hi" in chart and "<a href" not in chart and "\\u003ca href" not in chart
    assert any(label.endswith('&lt;a href="//e.x"&gt;hi&lt;/a&gt;&lt;/script&gt;') for label in figure["data"][0]["y"])


def test_long_lists_come_a_page_at_a_time(client, supervisor_user, alice, alice_space):
    for n in range(30):
        builders.segment(alice_space, summary=f"Cold topic {n}")
        builders.knowledge(alice, text=f"The user said thing {n}.")
    client.force_login(supervisor_user)

    first = client.get(url(alice), {"tab": "mid-term"})
    second = client.get(url(alice), {"tab": "mid-term", "page": 2}, **HX)
    facts = client.get(url(alice), {"tab": "long-term", "page": 2})

    assert len(first.context["segments"].object_list) == 25 and len(second.context["segments"].object_list) == 9
    assert f'href="{url(alice)}?tab=mid-term&amp;page=2"' in first.content.decode()
    assert 0 < len(facts.context["long_term"].user_knowledge) <= 25 and facts.context["facts_page"].number == 2
