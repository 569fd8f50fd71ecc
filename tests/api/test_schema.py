"""The OpenAPI document and the interactive docs, served offline (Swagger UI's files come from static, not a CDN)."""

from __future__ import annotations

import re

from django.contrib.staticfiles import finders

from integrations.proxy import CONSUMED, DEFAULT_ONLY, PASSED


def test_the_schema_is_an_openapi_3_document_anyone_can_fetch(client, db):
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert {"/api/v1/turns/", "/api/v1/retrieve/", "/api/v1/chat/", "/api/v1/pages/{id}/"} <= set(schema["paths"])
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "`Authorization: Bearer mos_...`",
    }


def test_the_contract_fields_are_documented(client, db):
    schemas = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["components"][
        "schemas"
    ]

    assert set(schemas["TurnOut"]["properties"]) == {"page_id", "queued_updating"}
    assert {"short_term", "pages", "profile", "knowledge"} <= set(schemas["RetrieveOut"]["properties"])
    assert {"id", "score", "text"} <= set(schemas["RetrievedPageOut"]["properties"])
    assert {"reply", "memory_used"} <= set(schemas["ChatOut"]["properties"])
    assert set(schemas["Error"]["properties"]["error"]["properties"]) == {"code", "message", "fields"}


def test_every_operation_documents_the_error_shape(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if path.startswith("/v1/"):
                continue  # the memory proxy answers errors in OpenAI's shape (below)
            for status in ("400", "401", "403", "404", "429"):
                content = operation["responses"][status]["content"]["application/json"]["schema"]
                assert content == {"$ref": "#/components/schemas/Error"}, (method, path, status)


def test_the_openai_compatible_proxy_is_documented_with_openais_error_shape(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    chat, models = schema["paths"]["/v1/chat/completions"]["post"], schema["paths"]["/v1/models"]["get"]
    assert chat["operationId"] == "proxy_chat_completions" and models["operationId"] == "proxy_models"
    for operation in (chat, models):
        assert operation["security"] == [{"bearerAuth": []}]
        for status in ("401", "403", "429"):
            content = operation["responses"][status]["content"]["application/json"]["schema"]
            assert content == {"$ref": "#/components/schemas/OpenAIError"}
    assert set(schema["components"]["schemas"]["OpenAIError"]["properties"]["error"]["properties"]) == {
        "message",
        "type",
        "param",
        "code",
    }
    assert {"400", "502"} <= set(chat["responses"]) and "text/event-stream" in chat["responses"]["200"]["content"]


def test_the_proxys_documented_request_fields_are_exactly_those_it_accepts(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    request = schema["components"]["schemas"]["ProxyChatRequest"]
    assert set(request["properties"]) == CONSUMED | set(PASSED) | set(DEFAULT_ONLY)
    assert request["additionalProperties"] is False and {"tools", "tool_choice", "n"} <= set(request["properties"])


def test_the_docs_page_loads_swagger_ui_from_our_own_static_files(client, db):
    response = client.get("/api/v1/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    script = client.get("/api/v1/docs/", {"script": ""})  # served as a file: the CSP allows no inline script
    assert 'src="/api/v1/docs/?script="' in html and "/api/v1/schema/" in script.content.decode()
    assert not re.search(r"https?://(?!127\.0\.0\.1|localhost|testserver)", html.replace("http://www.w3.org", ""))
    assets = re.findall(r'(?:src|href)="/static/([^"]+)"', html)
    assert any(asset.endswith("swagger-ui-bundle.js") for asset in assets)
    for asset in assets:
        assert finders.find(asset), asset
