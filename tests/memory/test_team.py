"""A tenant admin invites operators, changes their roles and removes them; each change is audited and a tenant
always keeps an admin."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memory.models import AuditEntry, Membership, Role
from memory.services.audit import Actor
from memory.services.team import TeamError, membership_invite, membership_remove, membership_role_set
from memory.services.tenancy import operator_create
from tests.conftest import PASSWORD


@pytest.fixture
def by_admin(admin_user) -> Actor:
    return Actor.operator(admin_user)


def test_inviting_a_new_address_creates_an_account_without_a_password_and_a_membership(tenant, by_admin):
    invitation = membership_invite(tenant=tenant, email=" Carol@Example.com ", role="supervisor", actor=by_admin)

    account = get_user_model().objects.get(username="carol@example.com")
    assert invitation.account_created and invitation.needs_password and not account.has_usable_password()
    assert Membership.objects.get(user=account, tenant=tenant).role == Role.SUPERVISOR
    entry = AuditEntry.objects.get(action="membership.invite")
    assert (entry.actor_label, entry.target_id, entry.after) == ("admin-of-acme", account.pk, {"role": "supervisor"})


def test_inviting_an_existing_account_adds_the_membership_only(tenant, other_tenant, by_admin):
    theirs = operator_create(username="dana", password=PASSWORD, tenant=other_tenant, role=Role.ADMIN)
    theirs.email = "dana@example.com"
    theirs.save(update_fields=["email"])

    invitation = membership_invite(tenant=tenant, email="dana@example.com", role="agent", actor=by_admin)

    assert not invitation.account_created and not invitation.needs_password
    assert get_user_model().objects.filter(email="dana@example.com").count() == 1
    theirs.refresh_from_db()
    assert theirs.check_password(PASSWORD)  # the password they had is kept
    assert set(theirs.memberships.values_list("tenant__slug", "role")) == {("globex", "admin"), ("acme", "agent")}


def test_inviting_an_operator_twice_or_an_end_user_or_a_bad_address_is_refused(tenant, by_admin, agent_user, alice):
    agent_user.email = "agent@example.com"
    agent_user.save(update_fields=["email"])
    with pytest.raises(TeamError, match="already an operator"):
        membership_invite(tenant=tenant, email="agent@example.com", role="agent", actor=by_admin)
    with pytest.raises(TeamError, match="not an email"):
        membership_invite(tenant=tenant, email="agent-of-acme", role="agent", actor=by_admin)
    alice.account.email = "alice@example.com"
    alice.account.save(update_fields=["email"])
    with pytest.raises(TeamError, match="end user"):
        membership_invite(tenant=tenant, email="alice@example.com", role="agent", actor=by_admin)
    with pytest.raises(TeamError, match="not a role"):
        membership_invite(tenant=tenant, email="x@example.com", role="root", actor=by_admin)
    assert not AuditEntry.objects.filter(action="membership.invite").exists()


def test_changing_a_role_is_audited_with_before_and_after(tenant, by_admin, agent_user):
    assert membership_role_set(tenant=tenant, user_id=agent_user.pk, role="supervisor", actor=by_admin)

    entry = AuditEntry.objects.get(action="membership.role")
    assert (entry.before, entry.after, entry.target_id) == ({"role": "agent"}, {"role": "supervisor"}, agent_user.pk)
    assert not membership_role_set(tenant=tenant, user_id=agent_user.pk, role="supervisor", actor=by_admin)
    assert AuditEntry.objects.filter(action="membership.role").count() == 1  # an unchanged role is not audited


def test_a_role_change_takes_effect_on_the_operators_next_request(tenant, by_admin, agent_user):
    client = Client()
    client.force_login(agent_user)
    assert client.get("/console/acme/escalations/").status_code == 403

    membership_role_set(tenant=tenant, user_id=agent_user.pk, role="supervisor", actor=by_admin)

    assert client.get("/console/acme/escalations/").status_code == 200


def test_removing_an_operator_keeps_their_account_and_is_audited(tenant, by_admin, agent_user):
    membership_remove(tenant=tenant, user_id=agent_user.pk, actor=by_admin)

    assert not Membership.objects.filter(user=agent_user).exists()
    assert get_user_model().objects.filter(pk=agent_user.pk).exists()
    entry = AuditEntry.objects.get(action="membership.remove")
    assert (entry.before, entry.target_id) == ({"role": "agent"}, agent_user.pk)


def test_the_last_admin_can_neither_leave_nor_give_up_the_role(tenant, admin_user, by_admin):
    with pytest.raises(TeamError, match="last admin"):
        membership_remove(tenant=tenant, user_id=admin_user.pk, actor=by_admin)
    with pytest.raises(TeamError, match="last admin"):
        membership_role_set(tenant=tenant, user_id=admin_user.pk, role="dpo", actor=by_admin)

    assert Membership.objects.get(user=admin_user).role == Role.ADMIN
    assert not AuditEntry.objects.filter(action__startswith="membership.").exists()


def test_with_a_second_admin_an_admin_may_step_down(tenant, admin_user, by_admin):
    membership_invite(tenant=tenant, email="erin@example.com", role="admin", actor=by_admin)

    membership_role_set(tenant=tenant, user_id=admin_user.pk, role="agent", actor=by_admin)

    assert Membership.objects.get(user=admin_user).role == Role.AGENT


def test_another_tenants_operator_cannot_be_changed_from_here(tenant, by_admin, other_tenant):
    theirs = operator_create(username="olga", password=PASSWORD, tenant=other_tenant, role=Role.AGENT)

    with pytest.raises(Membership.DoesNotExist):
        membership_role_set(tenant=tenant, user_id=theirs.pk, role="admin", actor=by_admin)
    with pytest.raises(Membership.DoesNotExist):
        membership_remove(tenant=tenant, user_id=theirs.pk, actor=by_admin)
