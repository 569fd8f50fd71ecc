"""Login throttling: too many failed logins for one account, or from one address, lock it out for a while.

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
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache


def _keys(username: str, address: str) -> list[str]:
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()  # no login names in cache keys
    return [f"login-failures:account:{account}", f"login-failures:address:{address}"]


def _limits() -> list[int]:
    return [settings.LOGIN_FAILURES_PER_ACCOUNT, settings.LOGIN_FAILURES_PER_ADDRESS]


def login_locked(*, username: str, address: str) -> bool:
    """Whether the account or the address has used up its failed logins for this window."""
    counts = cache.get_many(_keys(username, address))
    return any(counts.get(key, 0) >= limit for key, limit in zip(_keys(username, address), _limits(), strict=True))


def login_failed(*, username: str, address: str) -> None:
    """Count one failed login against the account and the address."""
    for key in _keys(username, address):
        cache.add(key, 0, timeout=settings.LOGIN_LOCKOUT_SECONDS)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr: start a new window
            cache.set(key, 1, timeout=settings.LOGIN_LOCKOUT_SECONDS)


def login_succeeded(*, username: str) -> None:
    cache.delete(_keys(username, "")[0])


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's login form, refusing accounts and addresses that failed too often (see the module docstring)."""

    def clean(self) -> dict:
        username = self.cleaned_data.get("username") or ""
        address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        if login_locked(username=username, address=address):
            minutes = math.ceil(settings.LOGIN_LOCKOUT_SECONDS / 60)
            raise forms.ValidationError(
                f"Too many failed logins for this account or from this address. Try again in {minutes} minutes.",
                code="throttled",
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            login_failed(username=username, address=address)
            raise
        login_succeeded(username=username)
        return cleaned
