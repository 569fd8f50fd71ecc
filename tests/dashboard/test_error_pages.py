"""Pages the site answers on its own: a 403 that explains the role's limits, and a favicon that is not a 404."""

from __future__ import annotations


def test_a_refused_page_explains_what_the_role_may_and_may_not_do(client, agent_user):
    client.force_login(agent_user)

    response = client.get("/console/acme/gdpr/")

    assert response.status_code == 403
    body = response.content.decode()
    assert "does not allow govern" in body
    assert "You may</strong> browse end users" in body
    assert "You may not</strong> edit, pin, lock and forget memories" in body
    assert 'href="/console/acme/"' in body and 'href="/console/acme/users/"' in body and 'href="/"' in body
    assert '<link rel="stylesheet"' in body  # the site's own page, with its header and navigation


def test_favicon_ico_sends_browsers_to_the_static_icon(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 302 and response["Location"].endswith("favicon.svg")
    assert client.get("/accounts/login/").content.decode().count('rel="icon"') == 1
