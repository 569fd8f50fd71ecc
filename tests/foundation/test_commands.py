"""demo_seed and tenant_create can run again and again and change nothing the second time."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from memory.models import Assistant, EndUser, Membership, MemorySpace, Page, Role, Tenant


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    models = [Tenant, Assistant, EndUser, Membership, MemorySpace, Page, User]
    return {model.__name__: model.objects.count() for model in models}


def test_demo_seed_creates_the_documented_demo(db, settings):
    output = run("demo_seed")

    tenant = Tenant.objects.get(slug="demo")
    ava = Assistant.objects.get(tenant=tenant, external_id="ava")
    assert ava.name == "Ava" and ava.persona
    roles = dict(Membership.objects.filter(tenant=tenant).values_list("user__username", "role"))
    assert roles == {"admin": Role.ADMIN, "supervisor": Role.SUPERVISOR, "agent": Role.AGENT, "dpo": Role.DPO}
    for external_id in ("alice", "bob"):
        end_user = EndUser.objects.get(tenant=tenant, external_id=external_id)
        assert end_user.account.username == external_id
        assert Page.objects.filter(space__end_user=end_user).count() >= 10
    for username in ("admin", "supervisor", "agent", "dpo", "alice", "bob"):
        assert User.objects.get(username=username).check_password(settings.DEMO_PASSWORD)
        assert username in output
    assert settings.DEMO_PASSWORD in output


def test_demo_seed_twice_adds_nothing(db):
    run("demo_seed")
    first = counts()

    output = run("demo_seed")

    assert counts() == first
    assert "already has conversations" in output


def test_demo_seed_uses_the_demo_password_setting(db, settings):
    settings.DEMO_PASSWORD = "another-demo-secret"

    run("demo_seed")

    assert User.objects.get(username="alice").check_password("another-demo-secret")


def test_tenant_create_makes_a_tenant_with_the_assistant_ava(db):
    output = run("tenant_create", "acme-corp")

    tenant = Tenant.objects.get(slug="acme-corp")
    assert tenant.assistants.get(external_id="ava").name == "Ava"
    assert "created" in output


def test_tenant_create_twice_keeps_one_tenant_and_one_assistant(db):
    run("tenant_create", "acme-corp", "--name", "Acme Corporation")

    output = run("tenant_create", "acme-corp")

    assert Tenant.objects.filter(slug="acme-corp").count() == 1
    assert Tenant.objects.get(slug="acme-corp").name == "Acme Corporation"
    assert Assistant.objects.filter(tenant__slug="acme-corp").count() == 1
    assert "already exists" in output


def test_tenant_create_refuses_a_bad_slug_with_a_clear_error(db):
    with pytest.raises(CommandError, match="lower-case letters, digits and hyphens"):
        run("tenant_create", "Not A Slug")

    assert not Tenant.objects.exists()
