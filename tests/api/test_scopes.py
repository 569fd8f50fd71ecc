"""Every route needs one scope: a token without it gets 403 before anything is looked up; with it, no 403."""

from __future__ import annotations

import pytest

from tests.api.conftest import error_of
from tests.api.routes import ROUTES, SCOPES


def _call(client, route, ids):
    return getattr(client, route.method)(route.url(ids), route.body, format="json")


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.id)
def test_a_token_without_the_scope_is_forbidden(scoped_api, ids, route):
    others = ",".join(scope for scope in SCOPES if scope != route.scope)

    response = _call(scoped_api(others), route, ids)

    assert response.status_code == 403
    assert error_of(response)["code"] == "permission_denied"
    assert route.scope in error_of(response)["message"]


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.id)
def test_a_token_with_only_that_scope_is_let_through(scoped_api, ids, route):
    response = _call(scoped_api(route.scope), route, ids)

    assert response.status_code not in (401, 403), response.content
    assert response.status_code < 500


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.id)
def test_no_token_is_unauthenticated_with_a_bearer_challenge(client, ids, route):
    response = getattr(client, route.method)(route.url(ids), route.body, content_type="application/json")

    assert response.status_code == 401
    assert error_of(response)["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_the_route_table_covers_every_operation_of_the_schema(api):
    """Every REST operation; the OpenAI-compatible /v1/ endpoints the schema also documents have their scope tests
    in tests/integrations/test_proxy.py."""
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    documented = {(method, path) for path, ops in schema["paths"].items() for method in ops if path.startswith("/api/")}

    tested = set()
    for route in ROUTES:
        path = "/api/v1/" + route.path
        for name in (
            "page", "segment", "knowledge", "profile", "receipt", "export", "import", "escalation", "dsr", "webhook",
            "delivery",
        ):  # fmt: skip
            path = path.replace("{" + name + "}", "{id}")
        path = path.replace("{user}", "{external_id}").replace("{assistant}", "{external_id}")
        tested.add((route.method, path))
    assert documented == tested
