"""Login, logout and password change, with Django's auth views and our templates."""

from __future__ import annotations

from django.contrib.auth import SESSION_KEY
from django.core.management import call_command

from tests.conftest import PASSWORD


def test_the_login_page_renders_with_the_base_template(client):
    response = client.get("/accounts/login/")

    assert response.status_code == 200
    body = response.content.decode()
    assert "MemoryOS" in body
    assert 'name="username"' in body and 'name="password"' in body
    assert "/static/django_htmx/htmx-2.min.js" in body
    assert "X-CSRFToken" in body


def test_the_header_shows_offline_mode_when_no_llm_is_configured(client, settings):
    settings.LLM_BASE_URL = ""
    assert "offline mode" in client.get("/accounts/login/").content.decode()

    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    assert "offline mode" not in client.get("/accounts/login/").content.decode()


def test_a_seeded_demo_operator_can_log_in(client, db, settings):
    call_command("demo_seed", stdout=open("/dev/null", "w"))  # noqa: SIM115

    response = client.post("/accounts/login/", {"username": "supervisor", "password": settings.DEMO_PASSWORD})

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert "Demo Co." in client.get("/").content.decode()


def test_a_wrong_password_shows_the_form_again_with_an_error(client, agent_user):
    response = client.post("/accounts/login/", {"username": agent_user.username, "password": "wrong"})

    assert response.status_code == 200
    assert SESSION_KEY not in client.session
    assert "enter a correct username and password" in response.content.decode()


def test_logout_is_a_post_that_ends_the_session(client, agent_user):
    client.force_login(agent_user)
    assert "Log out" in client.get("/").content.decode()

    assert client.get("/accounts/logout/").status_code == 405
    response = client.post("/accounts/logout/")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert SESSION_KEY not in client.session


def test_password_change_takes_the_new_password(client, alice):
    client.force_login(alice.account)
    assert client.get("/accounts/password_change/").status_code == 200

    response = client.post(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": "brand-new-secret-42", "new_password2": "brand-new-secret-42"},
    )

    assert response.status_code == 302
    assert "Password changed" in client.get(response["Location"]).content.decode()
    alice.account.refresh_from_db()
    assert alice.account.check_password("brand-new-secret-42")


def test_password_change_refuses_a_wrong_old_password(client, alice):
    client.force_login(alice.account)

    response = client.post(
        "/accounts/password_change/",
        {"old_password": "nope", "new_password1": "brand-new-secret-42", "new_password2": "brand-new-secret-42"},
    )

    assert response.status_code == 200
    assert "old password was entered incorrectly" in response.content.decode()
    alice.account.refresh_from_db()
    assert alice.account.check_password(PASSWORD)


def test_every_page_sends_a_content_security_policy_allowing_only_the_site_itself(client):
    policy = client.get("/accounts/login/")["Content-Security-Policy"]

    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["default-src"] == "'self'" and directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
