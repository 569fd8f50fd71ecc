"""API tokens in the console, for admins: created with scopes and an expiry, the secret shown once, revoked at once."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.models import ApiToken, AuditEntry
from memory.services.api_tokens import api_token_create
from memory.services.audit import Actor
from tests.dashboard.conftest import HX

TOKENS = "/console/acme/tokens/"
NEW = "/console/acme/tokens/new/"
SECRET = re.compile(r"mos_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")


def _api_status(secret: str) -> int:
    """The API's answer to the token alone (a fresh client, so no operator session is sent with it)."""
    return Client().get("/api/v1/users/", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code


def _create(client, **data) -> tuple[str, str]:
    response = client.post(NEW, {"name": "helpdesk", "scopes": ["read", "write"], **data})
    assert response.status_code == 200
    found = SECRET.findall(response.content.decode())
    assert len(found) == 1
    return found[0], response.content.decode()


def test_an_admin_sees_the_tokens_without_their_secrets(client, admin_user, tenant):
    created = api_token_create(tenant=tenant, name="crm-sync", scopes="read", actor=Actor.system("test"))
    client.force_login(admin_user)

    response = client.get(TOKENS)

    body = response.content.decode()
    assert response.status_code == 200 and "<html" in body and "crm-sync" in body and "Create a token" in body
    assert created.secret not in body and created.token.secret_hash not in body
    assert 'href="/console/acme/tokens/"' in body  # the admin's nav link


def test_an_htmx_request_gets_only_the_list(client, admin_user, tenant):
    api_token_create(tenant=tenant, name="crm-sync", scopes="read", actor=Actor.system("test"))
    client.force_login(admin_user)

    body = client.get(TOKENS, **HX).content.decode()

    assert "<html" not in body and 'id="token-list"' in body and "crm-sync" in body and "Create a token" not in body


def test_a_created_token_is_shown_once_and_authenticates_against_the_api(client, admin_user):
    client.force_login(admin_user)

    response = client.post(NEW, {"name": "helpdesk", "scopes": ["read", "write"], "expires_in_days": "30"})

    body = response.content.decode()
    secret = SECRET.findall(body)[0]
    assert "it will not be shown again" in body and "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get()
    assert token.name == "helpdesk" and token.scopes == ["read", "write"] and token.created_by == admin_user
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert token.secret_hash not in body
    assert _api_status(secret) == 200
    listing = client.get(TOKENS).content.decode()
    assert secret not in listing and token.secret_hash not in listing and SECRET.search(listing) is None
    assert AuditEntry.objects.filter(action="api_token.create", target_id=token.pk).exists()


def test_an_htmx_create_answers_the_form_with_the_secret_and_the_refreshed_list(client, admin_user):
    client.force_login(admin_user)

    response = client.post(NEW, {"name": "helpdesk", "scopes": ["govern"]}, **HX)

    body = response.content.decode()
    assert "<html" not in body and 'id="token-create"' in body and len(SECRET.findall(body)) == 1
    assert 'id="token-list" hx-swap-oob="true"' in body and "helpdesk" in body
    assert "no-store" in response["Cache-Control"] and ApiToken.objects.get().expires_at is None


def test_without_javascript_the_secret_is_in_a_readonly_box_and_the_copy_button_stays_hidden(client, admin_user):
    client.force_login(admin_user)

    body = client.post(NEW, {"name": "helpdesk", "scopes": ["read"]}).content.decode()

    assert re.search(r'<input id="token-secret" class="token-secret" readonly value="mos_[^"]+"', body)
    assert '<button type="button" class="button button-quiet" data-copy="#token-secret" hidden>Copy</button>' in body
    assert "js/copy.js" in body


def test_the_scopes_are_a_fieldset_of_checkboxes_each_inside_its_label(client, admin_user):
    client.force_login(admin_user)

    body = client.get(TOKENS).content.decode()

    assert '<fieldset class="field field-choices" aria-describedby="id_scopes_help">' in body
    assert "<legend>Scopes</legend>" in body
    assert re.search(
        r'<label for="id_scopes_0"><input type="checkbox" name="scopes" value="read"[^>]*> read</label>', body
    )


def test_a_revoked_token_is_refused_by_the_api(client, admin_user):
    client.force_login(admin_user)
    secret, _ = _create(client)
    token = ApiToken.objects.get()

    response = client.post(f"/console/acme/tokens/{token.pk}/revoke/", {"reason": "the integration was retired"})

    assert response.status_code == 302 and response["Location"] == TOKENS
    token.refresh_from_db()
    assert token.revoked_at is not None and _api_status(secret) == 401
    entry = AuditEntry.objects.get(action="api_token.revoke")
    assert entry.reason == "the integration was retired"
    assert "revoked" in client.get(TOKENS).content.decode()


def test_an_htmx_revoke_answers_the_refreshed_list(client, admin_user):
    client.force_login(admin_user)
    _create(client)
    token = ApiToken.objects.get()

    body = client.post(f"/console/acme/tokens/{token.pk}/revoke/", {"reason": "leaked"}, **HX).content.decode()

    assert "<html" not in body and 'id="token-list"' in body and "revoked" in body


def test_a_revoke_without_a_reason_keeps_the_token(client, admin_user):
    client.force_login(admin_user)
    secret, _ = _create(client)
    token = ApiToken.objects.get()

    client.post(f"/console/acme/tokens/{token.pk}/revoke/", {"reason": ""})

    token.refresh_from_db()
    assert token.revoked_at is None and _api_status(secret) == 200


def test_another_tenants_token_cannot_be_revoked(client, admin_user, other_tenant):
    theirs = api_token_create(tenant=other_tenant, name="globex-bot", scopes="read", actor=Actor.system("test"))
    client.force_login(admin_user)

    response = client.post(f"/console/acme/tokens/{theirs.token.pk}/revoke/", {"reason": "not mine"})

    assert response.status_code == 404
    theirs.token.refresh_from_db()
    assert theirs.token.revoked_at is None


@pytest.mark.parametrize(
    "data, error",
    [
        ({"name": "helpdesk"}, "This field is required."),
        ({"name": "helpdesk", "scopes": ["read"], "expires_in_days": "0"}, "greater than or equal to 1"),
        ({"name": "helpdesk", "scopes": ["read"], "expires_in_days": "9999"}, "less than or equal to 365"),
        ({"name": "", "scopes": ["read"]}, "This field is required."),
        ({"name": "helpdesk", "scopes": ["admin"]}, "Select a valid choice"),
    ],
)
def test_bad_input_shows_the_form_errors_and_creates_nothing(client, admin_user, data, error):
    client.force_login(admin_user)

    response = client.post(NEW, data)

    body = response.content.decode()
    assert response.status_code == 200 and error in body and "field-errors" in body
    assert SECRET.search(body) is None and not ApiToken.objects.exists()


@pytest.mark.parametrize("operator", ["agent_user", "supervisor_user", "dpo_user"])
def test_only_admins_manage_tokens(client, operator, request, tenant):
    token = api_token_create(tenant=tenant, name="crm-sync", scopes="read", actor=Actor.system("test")).token
    client.force_login(request.getfixturevalue(operator))

    assert client.get(TOKENS).status_code == 403
    assert client.post(NEW, {"name": "x", "scopes": ["read"]}).status_code == 403
    assert client.post(f"/console/acme/tokens/{token.pk}/revoke/", {"reason": "r"}).status_code == 403
    assert ApiToken.objects.count() == 1 and ApiToken.objects.get().revoked_at is None
    assert 'href="/console/acme/tokens/"' not in client.get("/console/acme/users/").content.decode()


def test_an_admin_of_another_tenant_gets_404(client, other_operator):
    client.force_login(other_operator)

    assert client.get(TOKENS).status_code == 404
    assert client.post(NEW, {"name": "x", "scopes": ["read"]}).status_code == 404
    assert not ApiToken.objects.exists()
