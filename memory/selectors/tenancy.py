"""Reads about tenancy: who a logged-in person is to the product."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from memory.models import EndUser


def end_user_for_account(user: AbstractBaseUser | AnonymousUser) -> EndUser | None:
    """The end user who logs in as `user`, with their tenant; None for anyone else."""
    if not user.is_authenticated:
        return None
    return EndUser.objects.filter(account_id=user.pk, is_active=True).select_related("tenant").first()
