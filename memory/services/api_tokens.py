"""API tokens: creating, revoking and authenticating the Bearer tokens integrations send.

A token reads `mos_<prefix>_<secret>`. The prefix (12 hex characters) is stored in clear and unique, so a token is
found with one indexed lookup; the secret (32 random bytes, url-safe base64) is stored only as its SHA-256 and
compared in constant time.

Why SHA-256 and not Django's password hashers: those are slow on purpose, to make guessing a *low-entropy* password
expensive. A 256-bit random secret cannot be guessed whatever the hash costs, so a slow hash would only add
hundreds of milliseconds to every API request (and make the API easy to overload). A stolen table of hashes gives
nothing that can be sent back, which is all a stored hash is for.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memory.models import ApiToken, Tenant
from memory.services.audit import Actor, audit_record

TOKEN_PREFIX = "mos"
SCOPES = ("read", "write", "govern")
LAST_USED_RESOLUTION = timedelta(minutes=1)  # write last_used_at at most once a minute per token


@dataclass(frozen=True)
class CreatedToken:
    """The stored token and the one and only copy of its full secret (shown once, never stored)."""

    token: ApiToken
    secret: str


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def scopes_parse(raw: str | list[str]) -> list[str]:
    """Scopes from `read,write` or a list; unknown or missing scopes raise ValidationError."""
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    scopes = {item.strip().lower() for item in items if isinstance(item, str) and item.strip()}
    unknown = sorted(scope for scope in scopes if scope not in SCOPES)
    if unknown:
        raise ValidationError(f"unknown scope {', '.join(unknown)}: use {', '.join(SCOPES)}")
    if not scopes:
        raise ValidationError(f"at least one scope is required: {', '.join(SCOPES)}")
    return [scope for scope in SCOPES if scope in scopes]


@transaction.atomic
def api_token_create(
    *,
    tenant: Tenant,
    name: str,
    scopes: str | list[str],
    actor: Actor,
    created_by=None,
    expires_at: datetime | None = None,
) -> CreatedToken:
    """A new token of `tenant` with `scopes` (read, write, govern); audited as `api_token.create`.

    The full token is returned once, in `CreatedToken.secret`; only its hash is stored.
    """
    name = (name or "").strip()[:100] or "API token"
    scope_list = scopes_parse(scopes)
    if expires_at is not None and expires_at <= timezone.now():
        raise ValidationError("the expiry must be in the future")
    prefix, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        tenant=tenant,
        name=name,
        prefix=prefix,
        secret_hash=secret_hash(secret),
        scopes=scope_list,
        created_by=created_by,
        expires_at=expires_at,
    )
    audit_record(
        tenant=tenant,
        actor=actor,
        action="api_token.create",
        target_type="api_token",
        target_id=token.pk,
        detail={"name": name, "prefix": prefix, "scopes": scope_list, "expires_at": expires_at},
    )
    return CreatedToken(token=token, secret=f"{TOKEN_PREFIX}_{prefix}_{secret}")


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: Actor, reason: str = "") -> bool:
    """Revoke a token at once. Returns False (and audits nothing) when it was already revoked."""
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    if not revoked:
        return False
    token.refresh_from_db(fields=["revoked_at"])
    audit_record(
        tenant=token.tenant_id,
        actor=actor,
        action="api_token.revoke",
        target_type="api_token",
        target_id=token.pk,
        reason=reason,
        detail={"name": token.name, "prefix": token.prefix},
    )
    return True


def _split(raw: str) -> tuple[str, str] | None:
    parts = (raw or "").strip().split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def api_token_authenticate(*, raw: str, now: datetime | None = None) -> ApiToken | None:
    """The live token that `raw` is, with its tenant; None for anything else (unknown, wrong, revoked, expired).

    Side effect: `last_used_at` is refreshed, at most once a minute per token.
    """
    parts = _split(raw)
    if parts is None:
        return None
    prefix, secret = parts
    token = ApiToken.objects.filter(prefix=prefix[:16]).select_related("tenant").first()
    # Hash and compare even when no token has this prefix, so timing does not tell which prefixes exist.
    expected = token.secret_hash if token else secret_hash(secrets.token_urlsafe(32))
    if not hmac.compare_digest(expected, secret_hash(secret)) or token is None:
        return None
    now = now or timezone.now()
    if token.revoked_at is not None or (token.expires_at is not None and token.expires_at <= now):
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
