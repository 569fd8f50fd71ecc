"""Login throttling: too many failed logins for one account, or from one address, lock it out for a while.

The throttle sits in the authentication backend (ThrottledModelBackend, the only one in AUTHENTICATION_BACKENDS),
so every login that asks Django to authenticate goes through it: the console's /accounts/login/, the admin's
/admin/login/, any other form; their failures count together. The forms only check first, to say why.
Counts live in the cache (CACHE_URL; shared by every gunicorn worker when it is Redis). A window opens at the
first failure and lasts LOGIN_LOCKOUT_SECONDS; past LOGIN_FAILURES_PER_ACCOUNT failures for an account, or
LOGIN_FAILURES_PER_ADDRESS from one client address, every login attempt for it is refused, right password or
not, until the window ends. A successful login clears its account's count.
"""

from __future__ import annotations

import hashlib
import math

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import PermissionDenied


def _limits(username: str, address: str) -> dict[str, int]:
    """Each cache key that counts this login's failures, with its limit; no address key for a login without one
    (authenticate() called outside a request)."""
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()  # no login names in cache keys
    limits = {f"login-failures:account:{account}": settings.LOGIN_FAILURES_PER_ACCOUNT}
    if address:
        limits[f"login-failures:address:{address}"] = settings.LOGIN_FAILURES_PER_ADDRESS
    return limits


def login_locked(*, username: str, address: str) -> bool:
    """Whether the account or the address has used up its failed logins for this window."""
    limits = _limits(username, address)
    counts = cache.get_many(list(limits))
    return any(counts.get(key, 0) >= limit for key, limit in limits.items())


def login_failed(*, username: str, address: str) -> None:
    """Count one failed login against the account and the address."""
    for key in _limits(username, address):
        cache.add(key, 0, timeout=settings.LOGIN_LOCKOUT_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr: start a new window
            cache.set(key, 1, timeout=settings.LOGIN_LOCKOUT_SECONDS)


def login_succeeded(*, username: str) -> None:
    cache.delete_many(list(_limits(username, "")))


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR", "") if request is not None else ""


class ThrottledModelBackend(ModelBackend):
    """Django's model backend behind the lockout: a locked account or address is refused before its password is
    checked (PermissionDenied stops authenticate() at once), and each failure or success is counted."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        username = username if username is not None else kwargs.get(get_user_model().USERNAME_FIELD)
        name, address = username or "", _address(request)
        if login_locked(username=name, address=address):
            raise PermissionDenied("too many failed logins")
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            login_failed(username=name, address=address)
        else:
            login_succeeded(username=name)
        return user


class LockoutMessage:
    """A login form mixin that says an account or address is locked out, rather than "wrong password"."""

    def clean(self) -> dict:
        username = self.cleaned_data.get("username") or ""
        if login_locked(username=username, address=_address(self.request)):
            minutes = math.ceil(settings.LOGIN_LOCKOUT_SECONDS / 60)
            raise forms.ValidationError(
                f"Too many failed logins for this account or from this address. Try again in {minutes} minutes.",
                code="throttled",
            )
        return super().clean()


class ThrottledAuthenticationForm(LockoutMessage, AuthenticationForm):
    """Django's login form, saying when the account or address is locked out (see the module docstring)."""


class ThrottledAdminAuthenticationForm(LockoutMessage, AdminAuthenticationForm):
    """The admin's login form, saying the same."""
