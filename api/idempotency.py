"""The `Idempotency-Key` header: a retried POST with the same key and body gets the first answer, once stored.

The same key with another body is a 409 (`idempotency_key_reused`); while the first request still runs, 409
(`idempotency_key_in_progress`). Keys are scoped to the tenant and the endpoint.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

from django.db import IntegrityError, transaction
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api.exceptions import Conflict
from memory.models import EndUser, Tenant
from memory.services.idempotency import (
    IdempotencyConflict,
    idempotent_request_claim,
    idempotent_request_complete,
    idempotent_request_release,
    request_fingerprint,
)
from memory.services.turns import EndUserClosed

HEADER = "Idempotency-Key"
KEY = re.compile(r"^[\x21-\x7e]{1,100}$")  # printable ASCII, no spaces, as in the IETF draft's examples

IDEMPOTENCY_KEY_PARAMETER = OpenApiParameter(
    HEADER,
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Any unique string (1 to 100 printable ASCII characters), e.g. a UUID. A retry with the same key "
    "and body returns the first answer and does the work once; the same key with another body answers 409.",
)

Outcome = tuple[int, dict, EndUser | None]  # status, body, the end user the answer is about


def idempotency_key(request) -> str | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not KEY.match(key):
        raise ValidationError({HEADER: ["Use 1 to 100 printable ASCII characters without spaces."]})
    return key


def idempotent(
    *, tenant: Tenant, endpoint: str, key: str | None, data: dict, run: Callable[[], Outcome], atomic: bool
) -> Response:
    """Run `run` once per key and answer what it answered, replaying the stored answer on a retry.

    `atomic` runs the claim and the work in one transaction: a failure leaves no claim behind, and a concurrent
    retry waits for the first request and then replays it. Work that must commit as it goes (the chat, which
    calls a language model) runs outside one; its claim is released when it fails.
    """
    if key is None:
        status, body, _ = run()
        return Response(body, status=status)
    with transaction.atomic() if atomic else contextlib.nullcontext():
        try:
            claim = idempotent_request_claim(
                tenant=tenant, endpoint=endpoint, key=key, fingerprint=request_fingerprint(data)
            )
        except IdempotencyConflict as conflict:
            raise _conflict(conflict.kind) from None
        if claim.replay is not None:
            status, body = claim.replay
            return Response(body, status=status, headers={"Idempotent-Replayed": "true"})
        try:
            status, body, end_user = run()
        except BaseException:
            if not atomic:
                idempotent_request_release(request=claim.request)
            raise
        if 200 <= status < 300:
            _complete(claim.request, status, body, end_user, atomic=atomic)
        elif atomic:
            transaction.set_rollback(True)  # an error answer is not stored: the client may retry
        else:
            idempotent_request_release(request=claim.request)
    return Response(body, status=status)


def _complete(request, status: int, body: dict, end_user: EndUser | None, *, atomic: bool) -> None:
    """Store the answer; an end user erased since the work committed leaves no answer about them to replay."""
    try:
        with transaction.atomic():
            idempotent_request_complete(request=request, status_code=status, response=body, end_user=end_user)
    except IntegrityError:
        if atomic:
            raise  # cannot happen: the work holds the end user's write lock until this transaction commits
        idempotent_request_release(request=request)
        raise EndUserClosed(erased=True) from None


def _conflict(kind: str) -> Conflict:
    if kind == "mismatch":
        return Conflict("This Idempotency-Key was already used with a different body.", code="idempotency_key_reused")
    return Conflict(
        "A request with this Idempotency-Key is still running; retry later.", code="idempotency_key_in_progress"
    )
