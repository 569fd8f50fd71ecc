"""An agent flags a fact or a turn for a supervisor; the supervisor's queue lists open ones oldest first and resolves
or dismisses each (an HTMX row swap, or a plain form); every step is audited, other tenants' ids are 404."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, Escalation, KnowledgeEntry, Page
from memory.services.audit import Actor
from memory.services.validity import escalation_open
from tests import builders
from tests.dashboard.conftest import HX

HOSTILE = '<img src=x onerror="alert(1)">'
# 4 auth and access + the open escalations with owner and flagger + the facts they name + the turns they name + the
# count
QUEUE_QUERIES = 8


@pytest.fixture
def fact(alice, alice_space):
    return KnowledgeEntry.objects.filter(end_user=alice).order_by("id").first()


@pytest.fixture
def flagged(tenant, fact, agent_user):
    return escalation_open(tenant=tenant, item=fact, actor=Actor.operator(agent_user), note="She drinks tea now")


def test_an_agent_flags_a_fact_with_a_plain_form_and_it_is_audited(client, agent_user, alice, fact):
    client.force_login(agent_user)

    response = client.post(f"/console/acme/flag/knowledge/{fact.pk}/", {"note": "wrong", "next": "/console/acme/"})

    assert response.status_code == 302 and response["Location"] == "/console/acme/"
    escalation = Escalation.objects.get()
    assert (escalation.target_type, escalation.target_id, escalation.flagged_by) == ("knowledge", fact.pk, agent_user)
    entry = AuditEntry.objects.get(action="escalation.open")
    assert (entry.actor_label, entry.subject_id, entry.reason) == ("agent-of-acme", alice.pk, "wrong")


def test_an_agent_flags_a_turn_with_htmx_and_gets_a_client_redirect(client, agent_user, alice, alice_space):
    turn = Page.objects.filter(space=alice_space).order_by("seq").first()
    client.force_login(agent_user)

    response = client.post(f"/console/acme/flag/page/{turn.pk}/", {"note": "moved"}, **HX)

    assert response.status_code == 200 and response["HX-Redirect"] == f"/console/acme/users/{alice.pk}/"
    assert Escalation.objects.get().target_type == "page"


def test_the_flag_form_is_a_modal_for_htmx_and_a_page_without(client, agent_user, fact):
    client.force_login(agent_user)
    url = f"/console/acme/flag/knowledge/{fact.pk}/"

    modal, page = client.get(url, **HX).content.decode(), client.get(url).content.decode()

    assert modal.lstrip().startswith('<div class="modal-backdrop">') and 'name="note"' in modal
    assert "<html" in page and "Flag for a supervisor" in page


def test_a_flag_without_a_note_changes_nothing(client, agent_user, fact):
    client.force_login(agent_user)

    response = client.post(f"/console/acme/flag/knowledge/{fact.pk}/", {"note": " "})

    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert not Escalation.objects.exists()


def test_the_supervisors_queue_lists_open_flags_oldest_first_with_item_owner_note_and_who(
    client, supervisor_user, tenant, alice, alice_space, flagged, agent_user
):
    turn = Page.objects.filter(space=alice_space).order_by("seq").first()
    later = escalation_open(tenant=tenant, item=turn, actor=Actor.operator(agent_user), note="Turn is stale")
    client.force_login(supervisor_user)

    body = client.get("/console/acme/escalations/").content.decode()

    assert body.index(f'id="escalation-{flagged.pk}"') < body.index(f'id="escalation-{later.pk}"')
    fact = KnowledgeEntry.objects.get(pk=flagged.target_id)
    assert fact.text in body and "She drinks tea now" in body and "agent-of-acme" in body and str(alice) in body
    assert 'href="/console/acme/escalations/"' in body  # the console navigation links the queue


def test_the_queue_costs_the_same_for_one_flag_and_for_many(
    client, supervisor_user, tenant, alice, alice_space, flagged, agent_user, django_assert_num_queries
):
    turn = Page.objects.filter(space=alice_space).order_by("seq").first()
    escalation_open(tenant=tenant, item=turn, actor=Actor.operator(agent_user), note="one turn")
    client.force_login(supervisor_user)
    with django_assert_num_queries(QUEUE_QUERIES):
        client.get("/console/acme/escalations/")

    for n in range(5):
        item = builders.knowledge(alice, text=f"fact {n}")
        escalation_open(tenant=tenant, item=item, actor=Actor.operator(agent_user), note=f"n{n}")
        escalation_open(tenant=tenant, item=turn, actor=Actor.operator(agent_user), note=f"t{n}")
    with django_assert_num_queries(QUEUE_QUERIES):
        client.get("/console/acme/escalations/")


def test_resolving_with_a_plain_form_settles_it_and_is_audited(client, supervisor_user, flagged):
    client.force_login(supervisor_user)

    response = client.post(f"/console/acme/escalations/{flagged.pk}/", {"resolution": "Marked outdated"})

    assert response.status_code == 302 and response["Location"] == "/console/acme/escalations/"
    flagged.refresh_from_db()
    assert (flagged.state, flagged.resolved_by, flagged.resolution) == ("resolved", supervisor_user, "Marked outdated")
    assert AuditEntry.objects.get(action="escalation.resolve").actor_label == "supervisor-of-acme"
    assert f"escalation-{flagged.pk}" not in client.get("/console/acme/escalations/").content.decode()


def test_dismissing_with_htmx_swaps_only_the_row(client, supervisor_user, flagged):
    client.force_login(supervisor_user)

    body = client.post(f"/console/acme/escalations/{flagged.pk}/", {"resolution": "fine", "dismiss": "1"}, **HX)

    text = body.content.decode()
    assert text.lstrip().startswith(f'<div class="card escalation" id="escalation-{flagged.pk}">')
    assert "<html" not in text and "Dismissed" in text
    assert AuditEntry.objects.filter(action="escalation.dismiss").exists()


def test_settling_twice_is_refused_and_says_why(client, supervisor_user, flagged):
    client.force_login(supervisor_user)
    client.post(f"/console/acme/escalations/{flagged.pk}/", {"resolution": "done"})

    again = client.post(f"/console/acme/escalations/{flagged.pk}/", {"resolution": "again"}, **HX).content.decode()

    assert "already settled" in again
    assert AuditEntry.objects.filter(action__in=["escalation.resolve", "escalation.dismiss"]).count() == 1


def test_agents_cannot_see_the_queue_or_settle(client, agent_user, flagged):
    client.force_login(agent_user)

    assert client.get("/console/acme/escalations/").status_code == 403
    assert client.post(f"/console/acme/escalations/{flagged.pk}/", {"resolution": "x"}).status_code == 403
    assert Escalation.objects.get().state == "open"


def test_another_tenants_ids_are_404(client, admin_user, tenant, stranger_space, other_operator):
    theirs = KnowledgeEntry.objects.filter(end_user=stranger_space.end_user).first()
    escalation = escalation_open(tenant=theirs.end_user.tenant, item=theirs, actor=Actor.system("t"), note="n")
    client.force_login(admin_user)

    assert client.post(f"/console/acme/flag/knowledge/{theirs.pk}/", {"note": "n"}).status_code == 404
    assert client.post(f"/console/acme/escalations/{escalation.pk}/", {"resolution": "x"}).status_code == 404
    assert Escalation.objects.get().state == "open"


def test_a_hostile_note_is_escaped_in_the_queue(client, supervisor_user, tenant, fact, agent_user):
    escalation_open(tenant=tenant, item=fact, actor=Actor.operator(agent_user), note=HOSTILE)
    client.force_login(supervisor_user)

    body = client.get("/console/acme/escalations/").content.decode()

    assert HOSTILE not in body and "&lt;img src=x" in body
