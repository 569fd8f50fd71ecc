"""The user memory page: STM in order, MTM by heat with its components, LPM profile and knowledge; reads audited."""

from __future__ import annotations

import json

from memory.models import AuditEntry, Segment
from memory.services.tenancy import assistant_create
from tests import builders


def url(end_user) -> str:
    return f"/console/acme/users/{end_user.pk}/"


def test_it_shows_every_tier(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    response = client.get(url(alice))

    memory = response.context["memory"]
    assert [p.seq for p in memory.short_term] == sorted(p.seq for p in memory.short_term)
    assert len(memory.short_term) == 7
    assert len(memory.segments) == 4 and memory.profile is not None
    body = response.content.decode()
    for heading in ("Short-term memory", "Mid-term memory", "Long-term personal memory", "Knowledge about the user"):
        assert heading in body
    assert "N_visit" in body and "L_interaction" in body and "R_recency" in body
    assert 'id="user-heat"' in body and "/static/vendor/plotly/plotly.min.js" in body


def test_segments_are_sorted_by_heat_hottest_first(client, agent_user, alice, alice_space):
    coolest, *_, hottest = Segment.objects.filter(space=alice_space).order_by("id")
    builders.heat_set(hottest, n_visit=7)
    builders.heat_set(coolest, n_visit=3)
    client.force_login(agent_user)

    rows = client.get(url(alice)).context["memory"].segments

    assert [r.segment.pk for r in rows[:2]] == [hottest.pk, coolest.pk]
    assert rows[0].heat.n_visit == 7 and rows[0].heat.value > rows[1].heat.value > rows[2].heat.value


def test_reading_a_users_memory_is_audited(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    client.get(url(alice))

    read = AuditEntry.objects.get(action="memory.read")
    assert read.subject_id == alice.pk and read.actor_label == "agent-of-acme"
    assert read.detail == {"what": "user memory page"}


def test_an_agent_sees_no_action_buttons_and_a_supervisor_does(client, agent_user, supervisor_user, alice, alice_space):
    client.force_login(agent_user)
    assert "data-action=" not in client.get(url(alice)).content.decode()

    client.force_login(supervisor_user)
    body = client.get(url(alice)).content.decode()
    assert 'data-action="pin"' in body and 'data-action="forget"' in body and 'data-action="lock"' in body


def test_pending_pages_are_counted(client, agent_user, alice, assistant, django_capture_on_commit_callbacks):
    builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks, place=False)
    client.force_login(agent_user)

    assert "5 pages left short-term memory" in client.get(url(alice)).content.decode()


def test_a_user_without_memory_gets_a_clear_empty_state(client, agent_user, bob):
    client.force_login(agent_user)

    body = client.get(url(bob)).content.decode()

    assert "has not talked to an assistant yet" in body


def test_it_switches_between_the_users_assistants(client, agent_user, tenant, alice, alice_space):
    max_ = assistant_create(tenant=tenant, external_id="max", name="Max")
    builders.page(builders.space_of(alice, max_), user_message="Hello Max, I like chess.")
    client.force_login(agent_user)

    memory = client.get(url(alice), {"assistant": "max"}).context["memory"]

    assert memory.space.assistant == max_ and len(memory.short_term) == 1 and memory.segments == []
    assert "Memory with" in client.get(url(alice)).content.decode()


def test_another_tenants_user_is_404(client, agent_user, stranger):
    client.force_login(agent_user)

    assert client.get(url(stranger)).status_code == 404
    assert client.get("/console/globex/users/").status_code == 404


def test_a_segment_summary_with_markup_is_a_plain_label_in_the_heat_chart(client, agent_user, alice, alice_space):
    builders.segment(alice_space, summary='<a href="//e.x">hi</a></script>', n_visit=3)
    client.force_login(agent_user)

    body = client.get(url(alice)).content.decode()

    start = body.index('data-plotly-for="user-heat"')
    chart = body[start : body.index("</script>", start)].lower()
    figure = json.loads(chart[chart.index(">") + 1 :])
    assert "hi" in chart and "<a href" not in chart and "\\u003ca href" not in chart
    assert any(label.endswith('&lt;a href="//e.x"&gt;hi&lt;/a&gt;&lt;/script&gt;') for label in figure["data"][0]["y"])
