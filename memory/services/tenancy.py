"""Tenants, assistants, end users and operators: creating them, idempotently.

Every function here is a get-or-create keyed on the natural key (slug, external id, username), so management
commands and seeds can run them again and again. Bad keys raise ValidationError with a message that says what is
allowed.
"""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User  # the default user model (no AUTH_USER_MODEL is set)
from django.core.exceptions import ValidationError
from django.db import transaction

from memory.models import Assistant, EndUser, Membership, Role, Tenant
from memory.services.audit import Actor, audit_record

DEFAULT_ASSISTANT_ID = "ava"
DEFAULT_ASSISTANT_NAME = "Ava"

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
EXTERNAL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,127}$")
USERNAME = re.compile(r"^[\w.@+-]{1,150}$")


def validate_slug(slug: str) -> str:
    if not SLUG.match(slug or ""):
        raise ValidationError(
            f"tenant slug {slug!r} is not valid: use 1 to 64 lower-case letters, digits and hyphens, "
            "starting and ending with a letter or digit"
        )
    return slug


def validate_external_id(external_id: str, *, what: str) -> str:
    if not EXTERNAL_ID.match(external_id or ""):
        raise ValidationError(
            f"{what} external id {external_id!r} is not valid: use 1 to 128 letters, digits and _ . @ : + -, "
            "starting with a letter or digit"
        )
    return external_id


def validate_username(username: str) -> str:
    if not USERNAME.match(username or ""):
        raise ValidationError(f"username {username!r} is not valid: use 1 to 150 letters, digits and @ . + - _")
    return username


@transaction.atomic
def tenant_create(*, slug: str, name: str = "") -> Tenant:
    """The tenant `slug`, created if missing, with its default assistant `ava` ("Ava").

    Idempotent: an existing tenant keeps its name and assistants; a missing `ava` is added.
    """
    validate_slug(slug)
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name or slug.replace("-", " ").title()})
    assistant_create(tenant=tenant, external_id=DEFAULT_ASSISTANT_ID, name=DEFAULT_ASSISTANT_NAME)
    return tenant


def assistant_create(*, tenant: Tenant, external_id: str, name: str, persona: str | None = None) -> Assistant:
    """The assistant `external_id` of `tenant`, created if missing.

    Idempotent; an existing assistant keeps its name, and its persona changes only when `persona` is given.
    """
    validate_external_id(external_id, what="assistant")
    assistant, created = Assistant.objects.get_or_create(
        tenant=tenant, external_id=external_id, defaults={"name": name, "persona": persona or ""}
    )
    if not created and persona is not None and assistant.persona != persona:
        assistant.persona = persona
        assistant.save(update_fields=["persona"])
    return assistant


@transaction.atomic
def end_user_create(
    *,
    tenant: Tenant,
    external_id: str,
    display_name: str = "",
    email: str = "",
    username: str | None = None,
    password: str | None = None,
) -> EndUser:
    """The end user `external_id` of `tenant`, created if missing, optionally with a login account.

    With `username`, the account of that name is created (or reused) and linked; with `password` too, its
    password is set. An account already linked to another end user is an error. Idempotent.
    """
    validate_external_id(external_id, what="end user")
    end_user, _ = EndUser.objects.get_or_create(
        tenant=tenant, external_id=external_id, defaults={"display_name": display_name, "email": email}
    )
    if username is not None:
        account = _account(username=username, password=password, email=email)
        if end_user.account_id not in (None, account.pk):
            raise ValidationError(f"end user {external_id!r} already logs in as another account")
        if EndUser.objects.filter(account=account).exclude(pk=end_user.pk).exists():
            raise ValidationError(f"account {username!r} already belongs to another end user")
        if end_user.account_id is None:
            end_user.account = account
            end_user.save(update_fields=["account"])
    return end_user


@transaction.atomic
def operator_create(*, username: str, password: str | None, tenant: Tenant, role: Role | str) -> User:
    """The operator account `username` with `role` in `tenant`, created or updated.

    Sets the password when one is given; replaces an existing role in that tenant. Idempotent.
    """
    if role not in Role.values:
        raise ValidationError(f"role {role!r} is not one of {', '.join(Role.values)}")
    account = _account(username=username, password=password)
    Membership.objects.update_or_create(user=account, tenant=tenant, defaults={"role": Role(role)})
    return account


def _account(*, username: str, password: str | None, email: str = "") -> User:
    validate_username(username)
    account, created = get_user_model().objects.get_or_create(username=username, defaults={"email": email})
    if password is None:
        if created:
            account.set_unusable_password()
            account.save(update_fields=["password"])
    # check_password first so a rerun with the same password doesn't rewrite the hash.
    elif created or not account.check_password(password):
        account.set_password(password)
        account.save(update_fields=["password"])
    return account


@transaction.atomic
def end_user_set_active(*, end_user: EndUser, active: bool, actor: Actor, reason: str = "") -> bool:
    """Deactivate an end user (no new turns or chat, no login) or reactivate them; their memory is kept.

    Returns whether anything changed; an unchanged state is not audited.
    """
    if not EndUser.objects.filter(pk=end_user.pk).exclude(is_active=active).update(is_active=active):
        return False
    end_user.is_active = active
    action = "end_user.activate" if active else "end_user.deactivate"
    audit_record(
        tenant=end_user.tenant_id,
        actor=actor,
        action=action,
        end_user=end_user,
        target_type="end_user",
        target_id=end_user.pk,
        reason=reason,
    )
    return True


@transaction.atomic
def assistant_set_active(*, assistant: Assistant, active: bool, actor: Actor, reason: str = "") -> bool:
    """Deactivate an assistant (no new turns or chat with it) or reactivate it; memory with it is kept.

    Returns whether anything changed; an unchanged state is not audited.
    """
    if not Assistant.objects.filter(pk=assistant.pk).exclude(is_active=active).update(is_active=active):
        return False
    assistant.is_active = active
    action = "assistant.activate" if active else "assistant.deactivate"
    audit_record(
        tenant=assistant.tenant_id,
        actor=actor,
        action=action,
        target_type="assistant",
        target_id=assistant.pk,
        reason=reason,
    )
    return True
