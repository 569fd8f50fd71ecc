"""The memory proxy (/v1/) in the API's OpenAPI document.

The proxy's views are plain Django views, which drf-spectacular does not discover, so a postprocessing hook (listed
in SPECTACULAR_SETTINGS) adds their operations, as its customization guide suggests for what introspection cannot
see. Their errors come in OpenAI's shape (`OpenAIError`), not the REST API's. The request's properties are built
from the fields the proxy accepts (integrations.proxy), so the document cannot promise a field it refuses.
"""

from __future__ import annotations

from integrations.proxy import ASSISTANT_HEADER, CONSUMED, DEFAULT_ONLY, PASSED

TAG = "OpenAI-compatible memory proxy"
OPENAI_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string", "example": "invalid_request_error"},
                "param": {"type": "string", "nullable": True, "example": "messages.0.content.1"},
                "code": {"type": "string", "example": "unsupported_value"},
            },
        }
    },
}
ERRORS = {
    "400": "Not OpenAI's request shape, or a field the proxy cannot honour (`param` names it), or tools without a "
    "configured model.",
    "401": "No token, or a token that is unknown, expired or revoked.",
    "403": "The token lacks the `write` scope (`read` for /v1/models).",
    "404": "No such assistant in the token's tenant.",
    "409": "The same Idempotency-Key is still being answered, or the user is deactivated.",
    "410": "The user has been erased.",
    "429": "Too many requests for this token; `Retry-After` says when to try again.",
    "502": "The language model failed; nothing was stored, and the same Idempotency-Key may be retried.",
}
NUMBER, TEXT, OBJECT = {"type": "number"}, {"type": "string"}, {"type": "object", "additionalProperties": True}
COUNT = {"type": "integer", "minimum": 1}
TEXT_PARTS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["type", "text"],
        "properties": {"type": {"type": "string", "enum": ["text"]}, "text": TEXT},
    },
}
MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {"oneOf": [TEXT, TEXT_PARTS], "nullable": True, "description": "Text only."},
        "tool_calls": {"type": "array", "items": OBJECT, "description": "An assistant's calls, sent on unchanged."},
        "tool_call_id": {"type": "string", "description": "The call a `tool` message answers."},
        "name": {
            "type": "string",
            "maxLength": 64,
            "description": "The participant, sent on to the model (not for system or developer messages).",
        },
    },
}
FIELDS = {
    "model": {"type": "string", "description": "Echoed; the configured model answers."},
    "messages": {
        "type": "array",
        "items": MESSAGE,
        "minItems": 1,
        "description": "Ends with the user's message, or with a tool's result in an exchange under way.",
    },
    "user": {"type": "string", "description": "The end user's external id (not sent on to the model)."},
    "stream": {"type": "boolean", "default": False},
    "stream_options": OBJECT,
    "temperature": NUMBER,
    "top_p": NUMBER,
    "max_tokens": COUNT,
    "max_completion_tokens": COUNT,
    "stop": {"oneOf": [TEXT, {"type": "array", "items": TEXT}]},
    "seed": {"type": "integer"},
    "presence_penalty": NUMBER,
    "frequency_penalty": NUMBER,
    "logit_bias": OBJECT,
    "response_format": OBJECT,
    "tools": {"type": "array", "items": OBJECT, "description": "Sent to the model unchanged; needs a model."},
    "tool_choice": {"oneOf": [TEXT, OBJECT]},
    "parallel_tool_calls": {"type": "boolean"},
    "n": {"type": "integer", "enum": [1]},
    "logprobs": {"type": "boolean", "enum": [False]},
    "modalities": {"type": "array", "items": {"type": "string", "enum": ["text"]}},
}
TOOL_CALL = {
    "type": "object",
    "properties": {
        "id": TEXT,
        "type": {"type": "string", "enum": ["function"]},
        "function": {"type": "object", "properties": {"name": TEXT, "arguments": TEXT}},
    },
}
COMPLETION = {
    "type": "object",
    "properties": {
        "id": TEXT,
        "object": {"type": "string", "enum": ["chat.completion"]},
        "created": {"type": "integer"},
        "model": TEXT,
        "memoryos_reply_id": {"type": "integer", "description": "The reply in the console and the audit."},
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "message": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string", "enum": ["assistant"]},
                            "content": {"type": "string", "nullable": True},
                            "tool_calls": {"type": "array", "items": TOOL_CALL},
                        },
                    },
                    "finish_reason": {"type": "string", "enum": ["stop", "tool_calls"]},
                },
            },
        },
        "usage": {
            "type": "object",
            "properties": {
                name: {"type": "integer"} for name in ("prompt_tokens", "completion_tokens", "total_tokens")
            },
        },
    },
}
MODELS = {
    "type": "object",
    "properties": {
        "object": {"type": "string", "enum": ["list"]},
        "data": {"type": "array", "items": {"type": "object", "properties": {"id": TEXT, "object": TEXT}}},
    },
}
CHAT_DESCRIPTION = (
    "OpenAI's chat completion with memory: memory retrieved for the user's last message goes into the prompt, the "
    "configured model answers (or the offline reply), and the turn is stored. Function calling passes through: a "
    "reply that calls tools stores nothing, the reply that ends the exchange in words is stored with the user's last "
    "message, and tool results are never stored. With `stream` the answer comes as server-sent events of "
    "`chat.completion.chunk`. Fields outside this schema are refused with a 400 naming them."
)


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _errors(statuses: tuple[str, ...]) -> dict:
    content = {"application/json": {"schema": _ref("OpenAIError")}}
    return {status: {"description": ERRORS[status], "content": content} for status in statuses}


def _chat_operation() -> dict:
    headers = [
        (ASSISTANT_HEADER, "The assistant's external id; optional when the tenant has one."),
        ("Idempotency-Key", "Replays the first answer to the same key instead of storing a second turn."),
    ]
    return {
        "operationId": "proxy_chat_completions",
        "summary": "Chat completion with memory (OpenAI-compatible)",
        "description": CHAT_DESCRIPTION,
        "tags": [TAG],
        "security": [{"bearerAuth": []}],
        "parameters": [
            {"in": "header", "name": name, "required": False, "schema": TEXT, "description": text}
            for name, text in headers
        ],
        "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("ProxyChatRequest")}}},
        "responses": {
            "200": {
                "description": "The completion, or with `stream` its chunks as server-sent events.",
                "content": {"application/json": {"schema": _ref("ProxyChatCompletion")}, "text/event-stream": {}},
            },
            **_errors(("400", "401", "403", "404", "409", "410", "429", "502")),
        },
    }


def _models_operation() -> dict:
    return {
        "operationId": "proxy_models",
        "summary": "The model that answers: the configured one, or memoryos-offline",
        "tags": [TAG],
        "security": [{"bearerAuth": []}],
        "responses": {
            "200": {"description": "One model.", "content": {"application/json": {"schema": _ref("ProxyModelList")}}},
            **_errors(("401", "403", "429")),
        },
    }


def add_proxy_paths(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: document /v1/chat/completions and /v1/models, with their OpenAI-shaped errors."""
    accepted = sorted(CONSUMED | set(PASSED) | set(DEFAULT_ONLY))
    chat_request = {
        "type": "object",
        "required": ["messages", "user"],
        "properties": {name: FIELDS[name] for name in accepted},
        "additionalProperties": False,
    }
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas |= {
        "OpenAIError": OPENAI_ERROR,
        "ProxyChatRequest": chat_request,
        "ProxyChatCompletion": COMPLETION,
        "ProxyModelList": MODELS,
    }
    paths = result.setdefault("paths", {})
    paths["/v1/chat/completions"] = {"post": _chat_operation()}
    paths["/v1/models"] = {"get": _models_operation()}
    return result
