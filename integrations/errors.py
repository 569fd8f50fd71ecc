"""What an integration answers when a call fails: one `Problem` (HTTP status, stable code, message) per exception.

The MCP server sends the message as the tool's error text; the memory proxy sends all three in OpenAI's error shape.
Unknown exceptions are not problems: they are bugs, and surface as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import APIException

from chat.services import InvalidMessage
from integrations.access import NotAuthenticated, RateLimited, ScopeMissing
from integrations.tools import ToolFailure
from memory.not_found import not_found_message
from memory.services.conversation import AssistantUnnamed, PartyInactive
from memory.services.governance import GovernanceError
from memory.services.legal_hold import LegalHoldActive
from memory.services.turns import EndUserClosed, InvalidTurn


@dataclass(frozen=True)
class Problem:
    status: int
    code: str
    message: str
    retry_after: int | None = None


def _validation_message(exc: DjangoValidationError) -> str:
    return " ".join(exc.messages)


def problem_of(exc: Exception) -> Problem | None:
    """The Problem an expected failure stands for; None for anything else (a bug)."""
    if isinstance(exc, NotAuthenticated):
        return Problem(401, "invalid_api_key", str(exc))
    if isinstance(exc, ScopeMissing):
        return Problem(403, "permission_denied", str(exc))
    if isinstance(exc, RateLimited):
        return Problem(429, "rate_limit_exceeded", str(exc), retry_after=math.ceil(exc.wait or 1))
    if isinstance(exc, ObjectDoesNotExist):
        return Problem(404, "not_found", not_found_message(exc))
    if isinstance(exc, EndUserClosed):
        if exc.erased:
            return Problem(410, "erased", "This user has been erased; nothing more is stored about them.")
        return Problem(409, "deactivated", "This user is deactivated; nothing more is stored about them.")
    if isinstance(exc, LegalHoldActive):
        return Problem(409, "legal_hold", str(exc))
    if isinstance(exc, RequestDataTooBig):
        return Problem(
            413, "request_too_large", f"The body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes."
        )
    if isinstance(exc, PartyInactive):
        return Problem(409, "deactivated", str(exc))
    if isinstance(exc, DjangoValidationError):
        return Problem(400, "invalid_request", _validation_message(exc))
    if isinstance(exc, AssistantUnnamed | InvalidTurn | InvalidMessage | GovernanceError | ToolFailure):
        return Problem(400, "invalid_request", str(exc))
    if isinstance(exc, APIException):  # raised by the REST API's helpers the integrations share (idempotency)
        return Problem(exc.status_code, str(exc.get_codes()), str(exc.detail))
    return None
