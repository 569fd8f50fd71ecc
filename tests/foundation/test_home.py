"""The landing page at / shows each kind of person what is theirs."""

from __future__ import annotations

from django.contrib.auth.models import User


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    response = client.get("/")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_an_operator_sees_their_tenants_and_roles(client, supervisor_user, other_tenant):
    client.force_login(supervisor_user)

    body = client.get("/").content.decode()

    assert "Your tenants" in body
    assert "Acme" in body and "Supervisor" in body and "read, write" in body
    assert "Globex" not in body


def test_an_end_user_is_sent_to_the_chat(client, alice):
    client.force_login(alice.account)

    response = client.get("/")

    assert response.status_code == 302 and response["Location"] == "/chat/"


def test_someone_with_no_role_and_no_profile_is_told_whom_to_ask(client, db):
    client.force_login(User.objects.create_user("nobody", password="x"))

    body = client.get("/").content.decode()

    assert "no role in any tenant" in body


def test_home_answers_only_get(client, agent_user):
    client.force_login(agent_user)

    assert client.post("/").status_code == 405
