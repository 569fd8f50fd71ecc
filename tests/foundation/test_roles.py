"""Each role gets exactly its permissions, in its own tenant only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from memory.models import Role
from memory.roles import PERMISSIONS, Permission, has_permission, role_for, tenant_for_operator_or_404

GRANTS = {
    Role.AGENT: {"read"},
    Role.SUPERVISOR: {"read", "write"},
    Role.DPO: {"read", "govern"},
    Role.ADMIN: {"read", "write", "govern", "manage"},
}
CASES = [(role, permission) for role in Role for permission in Permission]
OPERATOR_FIXTURE = {
    Role.AGENT: "agent_user",
    Role.SUPERVISOR: "supervisor_user",
    Role.DPO: "dpo_user",
    Role.ADMIN: "admin_user",
}


def test_the_permission_table_is_the_documented_one():
    assert {role: {str(p) for p in perms} for role, perms in PERMISSIONS.items()} == GRANTS


@pytest.mark.parametrize(("role", "permission"), CASES, ids=[f"{r.value}-{p.value}" for r, p in CASES])
def test_each_role_has_exactly_its_permissions(request, tenant, role, permission):
    operator = request.getfixturevalue(OPERATOR_FIXTURE[role])
    expected = permission.value in GRANTS[role]

    assert role_for(operator, tenant) == role
    assert has_permission(operator, tenant, permission) is expected
    if expected:
        assert tenant_for_operator_or_404(operator, tenant.slug, permission) == tenant
    else:
        with pytest.raises(PermissionDenied):
            tenant_for_operator_or_404(operator, tenant.slug, permission)


@pytest.mark.parametrize("role", list(Role), ids=[r.value for r in Role])
def test_no_role_reaches_another_tenant(request, tenant, other_tenant, role):
    operator = request.getfixturevalue(OPERATOR_FIXTURE[role])

    assert role_for(operator, other_tenant) is None
    for permission in Permission:
        assert not has_permission(operator, other_tenant, permission)
        with pytest.raises(Http404):
            tenant_for_operator_or_404(operator, other_tenant.slug, permission)


def test_a_missing_tenant_and_a_forbidden_tenant_look_the_same(admin_user, other_tenant):
    with pytest.raises(Http404) as missing:
        tenant_for_operator_or_404(admin_user, "no-such-tenant", Permission.READ)
    with pytest.raises(Http404) as forbidden:
        tenant_for_operator_or_404(admin_user, other_tenant.slug, Permission.READ)

    assert str(missing.value) == str(forbidden.value)


def test_a_superuser_gets_no_tenant_access_by_being_superuser(tenant):
    root = User.objects.create_superuser("root", password="x")

    assert role_for(root, tenant) is None
    with pytest.raises(Http404):
        tenant_for_operator_or_404(root, tenant.slug, Permission.READ)


def test_end_users_and_anonymous_people_have_no_role(tenant, alice):
    assert role_for(alice.account, tenant) is None
    assert role_for(AnonymousUser(), tenant) is None
    assert not has_permission(AnonymousUser(), tenant, "read")
    with pytest.raises(Http404):
        tenant_for_operator_or_404(AnonymousUser(), tenant.slug, "read")


def test_a_misspelt_permission_is_an_error_not_a_silent_no(agent_user, tenant):
    with pytest.raises(ValueError):
        has_permission(agent_user, tenant, "raed")
