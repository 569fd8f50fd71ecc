"""The team page: a tenant admin lists operators, invites one by email (Django's "set your password" link), changes
a role and removes a membership, each as an HTMX fragment or a plain page; others get 403, other tenants 404."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail

from memory.models import AuditEntry, Membership, Role
from memory.services.tenancy import operator_create
from tests.conftest import PASSWORD
from tests.dashboard.conftest import HX

# 4 session, account, membership with tenant and policy, role + the operators with their accounts
TEAM_QUERIES = 5
LINK = re.compile(r"http://testserver(/accounts/reset/\S+/)")


@pytest.fixture
def admin(client, admin_user):
    client.force_login(admin_user)
    return client


def test_only_admins_see_the_team_and_the_403_names_the_admins(client, agent_user, admin_user, dpo_user):
    for operator in (agent_user, dpo_user):
        client.force_login(operator)
        response = client.get("/console/acme/team/")
        assert response.status_code == 403
        assert "ask Acme's admin: <strong>admin-of-acme</strong>" in response.content.decode()


def test_another_tenants_team_is_404(admin, other_operator):
    assert admin.get("/console/globex/team/").status_code == 404
    assert admin.post(f"/console/globex/team/{other_operator.pk}/remove/").status_code == 404
    assert Membership.objects.filter(user=other_operator).exists()


def test_the_team_page_lists_operators_with_their_roles_and_the_nav_links_it(admin, agent_user, supervisor_user):
    body = admin.get("/console/acme/team/").content.decode()

    assert "<html" in body and 'href="/console/acme/team/"' in body
    assert body.index("admin-of-acme") < body.index("supervisor-of-acme") < body.index("agent-of-acme")
    assert '<option value="agent" selected>' in body


def test_the_team_fragment_is_the_list_only(admin, agent_user):
    body = admin.get("/console/acme/team/", **HX).content.decode()

    assert body.lstrip().startswith('<div id="team">') and "<html" not in body and "agent-of-acme" in body


def test_the_team_list_costs_the_same_for_two_operators_and_for_many(
    admin, tenant, agent_user, django_assert_num_queries
):
    with django_assert_num_queries(TEAM_QUERIES):
        admin.get("/console/acme/team/")
    for n in range(6):
        operator_create(username=f"op{n}", password=None, tenant=tenant, role=Role.AGENT)
    with django_assert_num_queries(TEAM_QUERIES):
        admin.get("/console/acme/team/")


def _invitation_link() -> str:
    (message,) = mail.outbox
    return LINK.search(message.body).group(1)


def test_inviting_by_plain_form_emails_a_link_that_sets_the_first_password(admin, client):
    response = admin.post("/console/acme/team/", {"email": "carol@example.com", "role": "supervisor"})

    assert response.status_code == 302 and response["Location"] == "/console/acme/team/"
    assert mail.outbox[0].to == ["carol@example.com"] and "Acme" in mail.outbox[0].subject
    form_url = client.get(_invitation_link(), follow=True).redirect_chain[-1][0]
    done = client.post(form_url, {"new_password1": "violet-harbour-91", "new_password2": "violet-harbour-91"})
    assert done.status_code == 302
    carol = get_user_model().objects.get(username="carol@example.com")
    assert carol.check_password("violet-harbour-91") and carol.memberships.get().role == Role.SUPERVISOR


def test_inviting_with_htmx_swaps_the_team_and_says_so(admin):
    response = admin.post("/console/acme/team/", {"email": "carol@example.com", "role": "agent"}, **HX)

    body = response.content.decode()
    assert body.lstrip().startswith('<div id="team">') and "carol@example.com was invited" in body
    assert "invited</span>" in body and len(mail.outbox) == 1


def test_inviting_an_existing_operator_of_another_tenant_sends_no_email(admin, other_operator):
    other_operator.email = "boss@globex.example"
    other_operator.save(update_fields=["email"])

    body = admin.post("/console/acme/team/", {"email": "boss@globex.example", "role": "dpo"}, **HX).content.decode()

    assert "they log in with their password" in body and mail.outbox == []
    assert Membership.objects.get(user=other_operator, tenant__slug="acme").role == Role.DPO


def test_an_invitation_refused_shows_the_reason_in_the_form(admin, agent_user):
    agent_user.email = "agent@example.com"
    agent_user.save(update_fields=["email"])

    body = admin.post("/console/acme/team/", {"email": "agent@example.com", "role": "dpo"}).content.decode()

    assert "already an operator here" in body and mail.outbox == []


def test_changing_a_role_by_plain_form_redirects_and_is_audited(admin, agent_user):
    response = admin.post(f"/console/acme/team/{agent_user.pk}/role/", {"role": "supervisor"})

    assert response.status_code == 302 and response["Location"] == "/console/acme/team/"
    assert Membership.objects.get(user=agent_user).role == Role.SUPERVISOR
    assert AuditEntry.objects.get(action="membership.role").actor_label == "admin-of-acme"


def test_changing_a_role_with_htmx_swaps_the_team(admin, agent_user):
    body = admin.post(f"/console/acme/team/{agent_user.pk}/role/", {"role": "dpo"}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="team">') and "The role was changed" in body
    assert Membership.objects.get(user=agent_user).role == Role.DPO


def test_the_last_admin_is_told_why_they_cannot_step_down_either_way(admin, admin_user):
    body = admin.post(f"/console/acme/team/{admin_user.pk}/role/", {"role": "agent"}, **HX).content.decode()
    assert "is the last admin of this tenant" in body

    response = admin.post(f"/console/acme/team/{admin_user.pk}/remove/", follow=True)
    assert "is the last admin of this tenant" in response.content.decode()
    assert Membership.objects.get(user=admin_user).role == Role.ADMIN


def test_removing_by_plain_form_and_with_htmx(admin, agent_user, supervisor_user):
    response = admin.post(f"/console/acme/team/{agent_user.pk}/remove/")
    assert response.status_code == 302 and not Membership.objects.filter(user=agent_user).exists()

    body = admin.post(f"/console/acme/team/{supervisor_user.pk}/remove/", **HX).content.decode()
    assert body.lstrip().startswith('<div id="team">') and "supervisor-of-acme" not in body
    assert AuditEntry.objects.filter(action="membership.remove").count() == 2


def test_an_admin_who_steps_down_goes_home(admin, tenant, admin_user):
    operator_create(username="second-admin", password=PASSWORD, tenant=tenant, role=Role.ADMIN)

    response = admin.post(f"/console/acme/team/{admin_user.pk}/role/", {"role": "agent"}, **HX)

    assert response["HX-Redirect"] == "/"
    assert admin.get("/console/acme/team/").status_code == 403


def test_password_reset_by_email_works_offline(client, agent_user):
    agent_user.email = "agent@example.com"
    agent_user.save(update_fields=["email"])

    assert client.post("/accounts/password_reset/", {"email": "agent@example.com"}).status_code == 302

    assert "MemoryOS" in mail.outbox[0].subject and LINK.search(mail.outbox[0].body)
    assert "Forgot your password?" in client.get("/accounts/login/").content.decode()
