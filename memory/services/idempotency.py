"""Idempotency keys for API writes: a retried POST gets the stored answer instead of doing the work twice.

A request is claimed by inserting its (tenant, endpoint, key) row; the unique constraint decides the race. The
answer is stored when the work succeeds; when it fails the claim is released, so the client may retry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import EndUser, IdempotentRequest, Tenant

# A claim with no answer after this long belongs to a request that died (the chat's LLM calls end well before).
ABANDONED_AFTER = timedelta(minutes=5)


class IdempotencyConflict(Exception):
    """The key was used for a different request (`mismatch`) or its first request is still running (`in_progress`)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True)
class Claim:
    """A claimed request; `replay` holds the stored (status, body) when the key was already answered."""

    request: IdempotentRequest
    replay: tuple[int, dict | None] | None = None


def request_fingerprint(data) -> str:
    """A digest of the request body as parsed, independent of key order and whitespace."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def idempotent_request_claim(*, tenant: Tenant, endpoint: str, key: str, fingerprint: str) -> Claim:
    """Claim `key` for this request, or return the stored answer of the request that used it.

    Raises IdempotencyConflict when the key came with another body, or when its request is still running. Inside
    a caller's transaction a concurrent claim of the same key waits for that transaction and then sees its answer.
    """
    try:
        with transaction.atomic():
            claimed = IdempotentRequest.objects.create(
                tenant=tenant, endpoint=endpoint, key=key, request_hash=fingerprint
            )
            return Claim(request=claimed)
    except IntegrityError:
        pass
    existing = IdempotentRequest.objects.get(tenant=tenant, endpoint=endpoint, key=key)
    if existing.request_hash != fingerprint:
        raise IdempotencyConflict("mismatch")
    if existing.status_code is not None:
        return Claim(request=existing, replay=(existing.status_code, existing.response))
    taken_over = IdempotentRequest.objects.filter(
        pk=existing.pk, status_code__isnull=True, created_at__lt=timezone.now() - ABANDONED_AFTER
    ).update(created_at=timezone.now())
    if not taken_over:
        raise IdempotencyConflict("in_progress")
    return Claim(request=existing)


def idempotent_request_complete(
    *, request: IdempotentRequest, status_code: int, response: dict, end_user: EndUser | None
) -> None:
    """Store the answer to replay. `end_user` ties the stored answer to them, so their erasure removes it."""
    IdempotentRequest.objects.filter(pk=request.pk).update(
        status_code=status_code, response=response, end_user=end_user
    )


def idempotent_request_release(*, request: IdempotentRequest) -> None:
    """Forget a claim whose request failed, so that the client can retry with the same key."""
    IdempotentRequest.objects.filter(pk=request.pk, status_code__isnull=True).delete()
