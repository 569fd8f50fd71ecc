"""Escalations: an agent flags an item for a supervisor, who resolves or dismisses it once; each step audited."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, EscalationState
from memory.selectors.escalations import escalation_get, escalation_list, escalation_targets
from memory.services.audit import Actor
from memory.services.governance import GovernanceError, knowledge_forget
from memory.services.validity import escalation_open, escalation_resolve
from tests import builders


@pytest.fixture
def fact(alice):
    return builders.knowledge(alice, text="The user drinks coffee")


def test_an_agents_flag_is_in_the_queue_with_its_note_owner_and_who_flagged_it(tenant, fact, agent_user):
    opened = escalation_open(tenant=tenant, item=fact, actor=Actor.operator(agent_user), note="she said tea now")

    [queued] = escalation_targets(escalation_list(tenant=tenant))
    assert (queued.pk, queued.note, queued.end_user, queued.flagged_by) == (
        opened.pk,
        "she said tea now",
        fact.end_user,
        agent_user,
    )
    assert queued.target == fact
    audit = AuditEntry.objects.get(action="escalation.open")
    assert (audit.target_type, audit.target_id, audit.reason) == ("knowledge", fact.pk, "she said tea now")


def test_resolving_settles_it_once_and_is_audited(tenant, fact, agent_user, supervisor_user):
    opened = escalation_open(tenant=tenant, item=fact, actor=Actor.operator(agent_user), note="check")
    supervisor = Actor.operator(supervisor_user)

    settled = escalation_resolve(escalation=opened, actor=supervisor, resolution="marked outdated")

    assert (settled.state, settled.resolved_by, settled.resolution) == ("resolved", supervisor_user, "marked outdated")
    assert not escalation_list(tenant=tenant).exists()
    with pytest.raises(GovernanceError):
        escalation_resolve(escalation=opened, actor=supervisor, resolution="again", dismiss=True)
    assert AuditEntry.objects.filter(action__startswith="escalation.").count() == 2


def test_dismissing_is_audited_as_a_dismissal(tenant, fact, agent_user, supervisor_user):
    opened = escalation_open(tenant=tenant, item=fact, actor=Actor.operator(agent_user), note="check")

    escalation_resolve(escalation=opened, actor=Actor.operator(supervisor_user), resolution="fine", dismiss=True)

    assert escalation_get(tenant=tenant, id=opened.pk).state == EscalationState.DISMISSED
    assert AuditEntry.objects.get(action="escalation.dismiss").reason == "fine"


def test_the_queue_is_oldest_first_and_an_item_forgotten_meanwhile_leaves_it_readable(tenant, fact, alice, agent_user):
    agent = Actor.operator(agent_user)
    first = escalation_open(tenant=tenant, item=fact, actor=agent, note="one")
    second = escalation_open(tenant=tenant, item=builders.knowledge(alice, text="other"), actor=agent, note="two")
    knowledge_forget(entry=fact, actor=agent, reason="gone")

    queued = escalation_targets(escalation_list(tenant=tenant))

    assert [(e.pk, e.target is None) for e in queued] == [(first.pk, True), (second.pk, False)]


def test_another_tenants_escalation_is_not_found_and_its_items_cannot_be_flagged(tenant, other_tenant, stranger):
    fact = builders.knowledge(stranger, text="elsewhere")
    theirs = escalation_open(tenant=other_tenant, item=fact, actor=Actor.system("test"), note="n")

    with pytest.raises(type(theirs).DoesNotExist):
        escalation_get(tenant=tenant, id=theirs.pk)
    with pytest.raises(GovernanceError):
        escalation_open(tenant=tenant, item=fact, actor=Actor.system("test"), note="n")


def test_a_note_is_required(tenant, fact):
    with pytest.raises(GovernanceError):
        escalation_open(tenant=tenant, item=fact, actor=Actor.system("test"), note=" ")
