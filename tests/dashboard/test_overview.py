"""The tenant overview: counts per tier and per-day plots of promotions, evictions, LLM calls and tokens."""

from __future__ import annotations

from django.utils import timezone

from memory.selectors.console import tenant_overview
from memory.steps.types import Usage
from tests import builders
from tests.dashboard.conftest import HX


def test_it_counts_memory_per_tier_and_plots_it(client, agent_user, alice_space):
    client.force_login(agent_user)

    response = client.get("/console/acme/")

    tiers = response.context["overview"].tiers
    assert tiers["STM pages"] == 7 and tiers["MTM pages"] == 5 and tiers["MTM segments"] == 4
    assert tiers["Users with a profile"] == 1 and tiers["User knowledge"] == 5
    body = response.content.decode()
    for plot in ("plot-tiers", "plot-updating", "plot-llm"):
        assert f'id="{plot}"' in body
    assert "/static/vendor/plotly/plotly.min.js" in body and "cdn" not in body.lower()


def test_promotions_evictions_calls_and_tokens_are_summed_per_day(tenant, alice_space):
    now = timezone.now()
    builders.event(alice_space, kind="eviction", detail={"heat": 0.5, "removed_pages": 2})
    builders.event(alice_space, kind="stm_overflow", usage=Usage(calls=2, prompt_tokens=100, completion_tokens=20))
    builders.reply(
        alice_space,
        user_message="hi",
        idempotency_key="k",
        page=builders.page(alice_space, user_message="hi"),
        usage=Usage(calls=1, prompt_tokens=50, completion_tokens=5),
    )

    data = tenant_overview(tenant=tenant, days=7, now=now)

    assert data.days[-1] == now.date() and len(data.days) == 7
    assert data.promotions[-1] == 4 and data.evictions[-1] == 1
    assert data.updating_calls[-1] == 2 and data.updating_tokens[-1] == 120
    assert data.reply_calls[-1] == 1 and data.reply_tokens[-1] == 55
    assert sum(data.promotions[:-1]) == 0


def test_with_htmx_only_the_charts_are_rendered_for_the_chosen_period(client, agent_user, alice_space):
    client.force_login(agent_user)

    body = client.get("/console/acme/", {"days": 7}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="charts">') and "<html" not in body and "last 7 days" in body


def test_an_empty_tenant_says_no_llm_calls_were_made(client, agent_user):
    client.force_login(agent_user)

    body = client.get("/console/acme/").content.decode()

    assert "No LLM calls in this period" in body


def test_the_overview_of_another_tenant_is_404(client, agent_user, other_tenant):
    client.force_login(agent_user)

    assert client.get("/console/globex/").status_code == 404
