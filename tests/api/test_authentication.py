"""Bearer tokens: only a live token of the tenant authenticates; operators' sessions work with their role."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.models import ApiToken, AuditEntry, Membership, Role
from memory.services.api_tokens import api_token_create, api_token_revoke
from memory.services.audit import Actor
from tests.api.conftest import client_for, error_of
from tests.conftest import PASSWORD

URL = "/api/v1/users/"


def test_a_live_token_authenticates_and_is_marked_used(api, token):
    response = api.get(URL)

    assert response.status_code == 200
    assert ApiToken.objects.get().last_used_at is not None


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer a b", "Bearer mos_123_wrong", "Bearer not-a-token", "Bearer mos__", "Bearer mos_ü_x"],
)
def test_a_malformed_or_unknown_token_is_401(tenant, header, client):
    response = client.get(URL, HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert error_of(response)["code"] == "authentication_failed"


def test_a_token_with_a_wrong_secret_is_401(token, client):
    prefix = token.rsplit("_", 1)[0]

    response = client.get(URL, HTTP_AUTHORIZATION=f"Bearer {prefix}_{'x' * 43}")

    assert response.status_code == 401


def test_a_revoked_token_is_401(tenant):
    created = api_token_create(tenant=tenant, name="ci", scopes="read", actor=Actor.system("test"))
    api_token_revoke(token=created.token, actor=Actor.system("test"), reason="leaked")

    assert client_for(created.secret).get(URL).status_code == 401


def test_an_expired_token_is_401(tenant):
    created = api_token_create(
        tenant=tenant,
        name="ci",
        scopes="read",
        actor=Actor.system("test"),
        expires_at=timezone.now() + timedelta(days=1),
    )
    ApiToken.objects.filter(pk=created.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert client_for(created.secret).get(URL).status_code == 401


def test_only_a_hash_of_the_secret_is_stored(tenant):
    created = api_token_create(tenant=tenant, name="ci", scopes="read", actor=Actor.system("test"))
    secret = created.secret.rsplit("_", 1)[1]

    stored = ApiToken.objects.get()
    assert secret not in (stored.secret_hash, stored.prefix, stored.name)
    assert len(stored.secret_hash) == 64


def test_creating_and_revoking_a_token_is_audited(tenant):
    created = api_token_create(tenant=tenant, name="ci", scopes=["read", "write"], actor=Actor.system("admin"))
    api_token_revoke(token=created.token, actor=Actor.system("admin"), reason="rotated")

    assert list(AuditEntry.objects.order_by("seq").values_list("action", flat=True)) == [
        "api_token.create",
        "api_token.revoke",
    ]
    assert created.token.scopes == ["read", "write"]


def test_revoking_twice_changes_nothing_the_second_time(tenant):
    created = api_token_create(tenant=tenant, name="ci", scopes="read", actor=Actor.system("test"))

    assert api_token_revoke(token=created.token, actor=Actor.system("test")) is True
    assert api_token_revoke(token=created.token, actor=Actor.system("test")) is False


def test_an_operator_session_works_with_the_permissions_of_their_role(client, supervisor_user, alice):
    client.login(username=supervisor_user.username, password=PASSWORD)

    assert client.get(URL).status_code == 200
    assert client.get("/api/v1/audit/").status_code == 403  # a supervisor may not govern


def test_an_operator_names_the_tenant_when_they_belong_to_several(client, admin_user, other_tenant, alice):
    Membership.objects.create(user=admin_user, tenant=other_tenant, role=Role.AGENT)
    client.login(username=admin_user.username, password=PASSWORD)

    assert client.get(URL).status_code == 400
    assert [u["external_id"] for u in client.get(URL, HTTP_X_TENANT="acme").json()["results"]] == ["alice"]
    assert client.get(URL, HTTP_X_TENANT="initech").status_code == 404


def test_a_session_without_a_role_in_any_tenant_gets_404(client, alice):
    client.login(username="alice", password=PASSWORD)  # an end user, not an operator

    assert client.get(URL).status_code == 404


def test_session_writes_need_the_csrf_token(supervisor_user, alice):
    client = Client(enforce_csrf_checks=True)
    client.login(username=supervisor_user.username, password=PASSWORD)

    response = client.post("/api/v1/users/alice/deactivate/", {"reason": "x"}, content_type="application/json")

    assert response.status_code == 403
    assert "CSRF" in error_of(response)["message"]
