"""python manage.py api_token_create --tenant SLUG --scopes ...: prints only the token, which then works."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import CommandError, call_command

from memory.models import ApiToken
from memory.services.api_tokens import api_token_authenticate
from memory.services.tenancy import tenant_create
from tests.api.conftest import client_for
from tests.foundation.processes import child_env, database_url_for_children, manage


def create(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token_create", *args, stdout=out, stderr=err)
    assert err.getvalue() == ""
    return out.getvalue()


def test_it_prints_only_the_token(tenant):
    printed = create("--tenant", "acme", "--scopes", "read,write,govern")

    assert printed.endswith("\n") and printed.count("\n") == 1
    token = printed.strip()
    assert token.startswith("mos_") and " " not in token
    assert ApiToken.objects.get().scopes == ["read", "write", "govern"]


def test_the_printed_token_authenticates_for_its_tenant(tenant, alice):
    token = create("--tenant", "acme", "--scopes", "read").strip()

    response = client_for(token).get("/api/v1/users/alice/")

    assert response.status_code == 200


def test_name_and_expiry_are_kept(tenant):
    create("--tenant", "acme", "--scopes", "read", "--name", "support bot", "--expires-days", "30")

    stored = ApiToken.objects.get()
    assert stored.name == "support bot"
    assert 29 <= (stored.expires_at - stored.created_at).days <= 30


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tenant", "nope", "--scopes", "read"], "no tenant 'nope'"),
        (["--tenant", "acme", "--scopes", "read,admin"], "unknown scope admin"),
        (["--tenant", "acme", "--scopes", ","], "at least one scope"),
        (["--tenant", "acme", "--scopes", "read", "--expires-days", "0"], "at least 1"),
    ],
)
def test_bad_arguments_fail_with_a_clear_error_and_no_token(tenant, args, message):
    with pytest.raises(CommandError, match=message):
        create(*args)
    assert not ApiToken.objects.exists()


@pytest.mark.slow
def test_run_as_a_process_its_stdout_is_the_token_alone(transactional_db):
    tenant_create(slug="demo", name="Demo")
    env = child_env(DATABASE_URL=database_url_for_children())

    result = manage("api_token_create", "--tenant", "demo", "--scopes", "read,write,govern", env=env)

    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"mos_[0-9a-f]{12}_[A-Za-z0-9_-]{43}\n", result.stdout), result.stdout
    assert api_token_authenticate(raw=result.stdout.strip()).tenant.slug == "demo"
