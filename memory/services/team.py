"""A tenant's operators: inviting one with a role, changing their role, removing them; every change audited.

A tenant always keeps an admin: the last one can neither leave nor give up the role (TeamError says so). Admin
memberships are locked while that is checked, so two admins demoting each other at once cannot both succeed.
Who may call these is checked by the callers (memory.roles: the manage permission). Sending the invitation email
is the interface's part (it knows the site's address); the service says whether the account still needs a password.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User  # the default user model (no AUTH_USER_MODEL is set)
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from memory.models import EndUser, Membership, Role, Tenant
from memory.services.audit import Actor, audit_record


class TeamError(ValueError):
    """A change to the team that is refused; the message says why, in words for the admin."""


@dataclass(frozen=True)
class Invitation:
    """An invited operator's membership, and whether their account was created for it (it has no password yet)."""

    membership: Membership
    account_created: bool

    @property
    def needs_password(self) -> bool:
        return not self.membership.user.has_usable_password()


def _role(role: Role | str) -> Role:
    if role not in Role.values:
        raise TeamError(f"{role!r} is not a role: use one of {', '.join(Role.values)}")
    return Role(role)


def _email(email: str) -> str:
    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise TeamError(f"{email!r} is not an email address") from None
    return email


def _account_for(email: str) -> tuple[User, bool]:
    """The login account of `email` (by username, then by address), created with an unusable password if none."""
    users = get_user_model().objects
    account = users.filter(username__iexact=email).first() or users.filter(email__iexact=email).order_by("pk").first()
    if account is not None:
        return account, False
    account = users.create(username=email, email=email)
    account.set_unusable_password()
    account.save(update_fields=["password"])
    return account, True


def _audit(membership: Membership, *, actor: Actor, action: str, before=None, after=None) -> None:
    audit_record(
        tenant=membership.tenant_id, actor=actor, action=action, target_type="operator",
        target_id=membership.user_id, before=before, after=after,
        detail={"operator": membership.user.get_username()},
    )  # fmt: skip


@transaction.atomic
def membership_invite(*, tenant: Tenant, email: str, role: Role | str, actor: Actor) -> Invitation:
    """Give the person at `email` `role` in `tenant`; audited `membership.invite`.

    A new address gets an account named after it with an unusable password (the caller sends the "set your
    password" email); an existing account gets the membership only. An operator already in the tenant, or an end
    user's login, is refused.
    """
    role, email = _role(role), _email(email)
    account, created = _account_for(email)
    if EndUser.objects.filter(account=account).exists():
        raise TeamError(f"{email} is an end user's login, not an operator's")
    if Membership.objects.filter(tenant=tenant, user=account).exists():
        raise TeamError(f"{account.get_username()} is already an operator here: change their role instead")
    membership = Membership.objects.create(tenant=tenant, user=account, role=role)
    _audit(membership, actor=actor, action="membership.invite", after={"role": role.value})
    return Invitation(membership=membership, account_created=created)


def _membership_for_change(*, tenant: Tenant, user_id: int) -> tuple[Membership, int]:
    """The operator's membership, locked with every admin's of the tenant, and how many admins there are."""
    admins = list(
        Membership.objects.select_for_update().filter(tenant=tenant, role=Role.ADMIN).order_by("pk").values_list("pk")
    )
    membership = Membership.objects.select_for_update().select_related("user").filter(tenant=tenant, user_id=user_id)
    found = membership.first()
    if found is None:
        raise Membership.DoesNotExist("No such operator in this tenant")
    return found, len(admins)


def _keep_an_admin(membership: Membership, admins: int, *, what: str) -> None:
    if membership.role == Role.ADMIN and admins <= 1:
        raise TeamError(
            f"{membership.user.get_username()} is the last admin of this tenant and cannot {what}: "
            "make another operator admin first"
        )


@transaction.atomic
def membership_role_set(*, tenant: Tenant, user_id: int, role: Role | str, actor: Actor) -> bool:
    """Change an operator's role in `tenant`; audited `membership.role` with the roles before and after.

    Takes effect on their next request (roles are read per request). Returns False, unaudited, when the role is
    unchanged; raises TeamError when it would leave the tenant without an admin, Membership.DoesNotExist when the
    user is not an operator of `tenant`.
    """
    role = _role(role)
    membership, admins = _membership_for_change(tenant=tenant, user_id=user_id)
    if membership.role == role:
        return False
    _keep_an_admin(membership, admins, what="give up the admin role")
    before = membership.role
    Membership.objects.filter(pk=membership.pk).update(role=role)
    membership.role = role
    _audit(membership, actor=actor, action="membership.role", before={"role": before}, after={"role": role.value})
    return True


@transaction.atomic
def membership_remove(*, tenant: Tenant, user_id: int, actor: Actor) -> None:
    """Remove an operator from `tenant` (their account and other tenants stay); audited `membership.remove`.

    Raises TeamError for the last admin, Membership.DoesNotExist when the user is not an operator of `tenant`.
    """
    membership, admins = _membership_for_change(tenant=tenant, user_id=user_id)
    _keep_an_admin(membership, admins, what="leave it")
    _audit(membership, actor=actor, action="membership.remove", before={"role": membership.role})
    Membership.objects.filter(pk=membership.pk).delete()
