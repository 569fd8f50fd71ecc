"""A token never reaches another tenant's data: Globex's token gets 404 for every Acme id, never 403 or the data."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, EndUser, KnowledgeEntry, Page, ProfileVersion, Segment
from memory.services.tenancy import assistant_create
from tests.api.conftest import error_of
from tests.api.routes import ROUTES

OBJECT_ROUTES = [route for route in ROUTES if route.addresses_an_object]
LISTS = [
    "users/",
    "assistants/",
    "pages/",
    "segments/",
    "knowledge/",
    "profile-versions/",
    "audit/",
    "erasure-receipts/",
    "review/knowledge/",
    "review/profile-versions/",
    "webhooks/",
]


@pytest.mark.parametrize("route", OBJECT_ROUTES, ids=lambda r: r.id)
def test_another_tenants_token_gets_404_for_every_object_route(stranger_api, ids, tenant, route):
    assistant_create(tenant=tenant, external_id="max", name="Max")
    ids = ids | {"assistant": "max"}  # Globex has its own `ava`; `max` exists only in Acme
    before = _state()

    response = getattr(stranger_api, route.method)(route.url(ids), route.body, format="json")

    assert response.status_code == 404, response.content
    assert error_of(response)["code"] == "not_found"
    assert _state() == before


def _state() -> tuple:
    return (
        Page.objects.count(),
        Segment.objects.filter(pinned=False, locked=False).count(),
        KnowledgeEntry.objects.count(),
        ProfileVersion.objects.count(),
        EndUser.objects.filter(is_active=True).count(),
        AuditEntry.objects.filter(tenant__slug="acme").count(),
    )


@pytest.mark.parametrize("path", LISTS)
def test_another_tenants_lists_hold_none_of_acmes_objects(stranger_api, ids, path):
    response = stranger_api.get(f"/api/v1/{path}")

    assert response.status_code == 200
    text = response.content.decode()
    assert "alice" not in text and "Biscuit" not in text and "beagle" not in text


def test_retrieval_for_a_user_of_another_tenant_is_not_found(stranger_api, ids):
    response = stranger_api.post(
        "/api/v1/retrieve/", {"user": "alice", "assistant": "ava", "query": "beagle"}, format="json"
    )

    assert response.status_code == 404


def test_a_turn_for_the_same_external_id_goes_to_the_callers_own_tenant(stranger_api, ids, other_tenant):
    body = {"user": "alice", "assistant": "ava", "user_message": "Hi", "assistant_reply": "Hello"}

    response = stranger_api.post("/api/v1/turns/", body, format="json")

    page = Page.objects.get(pk=response.json()["page_id"])
    assert page.space.tenant == other_tenant
    assert page.space.end_user != EndUser.objects.get(tenant__slug="acme", external_id="alice")
