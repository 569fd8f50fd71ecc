"""The tenancy services: get-or-create by natural key, with clear errors for bad keys."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memory.models import Membership, Role
from memory.services.tenancy import assistant_create, end_user_create, operator_create, tenant_create


def test_tenant_create_names_a_tenant_from_its_slug_when_no_name_is_given(db):
    assert tenant_create(slug="blue-sky").name == "Blue Sky"


@pytest.mark.parametrize("slug", ["", "UPPER", "with space", "-leading", "trailing-", "x" * 65])
def test_tenant_create_refuses_bad_slugs(db, slug):
    with pytest.raises(ValidationError, match="slug"):
        tenant_create(slug=slug)


def test_assistant_create_is_idempotent_and_updates_only_a_given_persona(tenant):
    first = assistant_create(tenant=tenant, external_id="max", name="Max", persona="Brisk.")

    again = assistant_create(tenant=tenant, external_id="max", name="Other name")
    changed = assistant_create(tenant=tenant, external_id="max", name="Max", persona="Gentle.")

    assert first.pk == again.pk == changed.pk
    assert again.name == "Max" and again.persona == "Brisk."
    assert changed.persona == "Gentle."


@pytest.mark.parametrize("external_id", ["", " padded", "has space", "x" * 129])
def test_end_user_create_refuses_bad_external_ids(tenant, external_id):
    with pytest.raises(ValidationError, match="external id"):
        end_user_create(tenant=tenant, external_id=external_id)


def test_end_user_create_without_username_has_no_login(tenant):
    end_user = end_user_create(tenant=tenant, external_id="crm:12345")

    assert end_user.account is None
    assert end_user_create(tenant=tenant, external_id="crm:12345").pk == end_user.pk


def test_the_same_external_id_in_two_tenants_is_two_end_users(tenant, other_tenant):
    ours = end_user_create(tenant=tenant, external_id="sam")
    theirs = end_user_create(tenant=other_tenant, external_id="sam")

    assert ours.pk != theirs.pk


def test_one_account_cannot_belong_to_two_end_users(tenant, alice):
    with pytest.raises(ValidationError, match="another end user"):
        end_user_create(tenant=tenant, external_id="alice-2", username="alice")


def test_operator_create_replaces_the_role_in_that_tenant_only(tenant, other_tenant):
    operator_create(username="olga", password="pw-123456", tenant=tenant, role=Role.AGENT)
    operator_create(username="olga", password="pw-123456", tenant=other_tenant, role=Role.DPO)

    operator = operator_create(username="olga", password=None, tenant=tenant, role="supervisor")

    assert dict(Membership.objects.filter(user=operator).values_list("tenant__slug", "role")) == {
        "acme": Role.SUPERVISOR,
        "globex": Role.DPO,
    }
    assert operator.check_password("pw-123456")


def test_operator_create_refuses_an_unknown_role(tenant):
    with pytest.raises(ValidationError, match="not one of agent, supervisor, dpo, admin"):
        operator_create(username="olga", password="pw", tenant=tenant, role="owner")
