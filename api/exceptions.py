"""Every API error has one shape: `{"error": {"code": ..., "message": ..., "fields": {...}}}`.

`code` is stable and machine-readable (`validation_error`, `not_found`, `not_authenticated`, `permission_denied`,
`throttled`, `conflict`, `parse_error`, ...); `message` is for people; `fields` maps a request field to its problems
(empty when the error is not about a field).
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import set_rollback

from memory.services.governance import GovernanceError
from memory.services.legal_hold import LegalHoldActive
from memory.services.turns import EndUserClosed, InvalidTurn
from memory.services.webhook_delivery import WebhookError

log = logging.getLogger(__name__)

CODES = {"invalid": "validation_error", "error": "server_error"}


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


class Gone(exceptions.APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "This is no longer available."
    default_code = "gone"


def _flatten(errors, prefix: str = "") -> dict[str, list[str]]:
    """Nested serializer errors as {"field.sub": ["message", ...]}."""
    flat: dict[str, list[str]] = {}
    if isinstance(errors, dict):
        for key, value in errors.items():
            flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(errors, list) and errors and not all(isinstance(e, str) for e in errors):
        for index, value in enumerate(errors):
            flat.update(_flatten(value, f"{prefix}.{index}" if prefix else str(index)))
    else:
        flat[prefix or "non_field_errors"] = [str(e) for e in (errors if isinstance(errors, list) else [errors])]
    return flat


def _as_api_exception(exc: Exception) -> exceptions.APIException | None:
    if isinstance(exc, exceptions.APIException):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge()
    if isinstance(exc, SuspiciousOperation):
        return exceptions.ParseError("The request is malformed.")
    if isinstance(exc, Http404):
        return exceptions.NotFound(*exc.args)
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(*exc.args)
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(as_serializer_error(exc))
    if isinstance(exc, EndUserClosed):
        if exc.erased:
            return Gone("This user has been erased; nothing more is stored about them.", code="erased")
        return Conflict("This user is deactivated; nothing more is stored about them.", code="deactivated")
    if isinstance(exc, LegalHoldActive):
        return Conflict(str(exc), code="legal_hold")
    if isinstance(exc, InvalidTurn | GovernanceError | WebhookError):
        return exceptions.ValidationError({"non_field_errors": [str(exc)]})
    return None


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _body(exc: exceptions.APIException) -> dict:
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        general = fields.pop("non_field_errors", [])
        message = " ".join(general) or "Some fields are not valid: " + ", ".join(sorted(fields)) + "."
        return error_body("validation_error", message, fields)
    detail = exc.detail
    code = detail.code if hasattr(detail, "code") else exc.default_code
    return error_body(CODES.get(code, code), str(detail))


def api_exception_handler(exc: Exception, context) -> Response:
    """DRF's exception handler, in our error shape; unexpected exceptions become a logged 500 in that shape too."""
    api_exc = _as_api_exception(exc)
    if api_exc is None:
        log.exception("API request failed", exc_info=exc)
        set_rollback()
        return Response(error_body("server_error", "Something went wrong on our side."), status=500)
    headers = {}
    if getattr(api_exc, "auth_header", None):
        headers["WWW-Authenticate"] = api_exc.auth_header
    if getattr(api_exc, "wait", None):
        headers["Retry-After"] = f"{int(api_exc.wait)}"
    set_rollback()
    return Response(_body(api_exc), status=api_exc.status_code, headers=headers)
