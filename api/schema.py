"""The OpenAPI document's shared parts: the Bearer scheme, and the error responses every operation can give."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string", "example": "validation_error"},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}

ERRORS = {
    "400": "The request is not valid (see `fields`), or its body is not JSON / not UTF-8.",
    "401": "No token, or a token that is unknown, expired or revoked.",
    "403": "The token lacks the scope this operation needs.",
    "404": "No such object in the token's tenant (other tenants' ids are answered the same way).",
    "409": "A conflict: an idempotency key reused with another body, a deactivated user or assistant, or an "
    "export that is not ready.",
    "429": "Too many requests for this token; `Retry-After` says when to try again.",
}
BODY_ERRORS = {"413": "The request body is too large.", "415": "The body is not JSON."}
CHAT_ERRORS = {"502": "The language model failed; nothing was stored, and the same Idempotency-Key may be retried."}


class ApiAutoSchema(AutoSchema):
    """Documents each list view's `filters_class` as its query parameters."""

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        filters = getattr(self.view, "filters_class", None)
        if self.method == "GET" and filters is not None:
            parameters = [*parameters, filters]
        return parameters


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer mos_...`"}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: every operation documents the error shape for every error status."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/Error"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if path.endswith(("/schema/", "/docs/")):
                continue
            responses = operation.setdefault("responses", {})
            errors = ERRORS | (BODY_ERRORS if method in ("post", "patch", "put") else {})
            errors |= CHAT_ERRORS if operation.get("operationId") == "chat" else {}
            for status, description in errors.items():
                responses.setdefault(status, {"description": description})
            for status, response in responses.items():
                if int(status) >= 400:
                    response["content"] = {"application/json": {"schema": reference}}
    return result
