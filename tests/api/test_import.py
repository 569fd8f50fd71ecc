"""POST /api/v1/users/{id}/import/: a memory bundle into a user, with a dry run; refusals in the API's error shape."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, EndUser, Page
from memory.services.gdpr import user_erase
from tests.api.conftest import error_of
from tests.bundles import DPO, bundle_of, governed_memory, memory_of

URL = "/api/v1/users/{}/import/"


@pytest.fixture
def bundle(alice, assistant, django_capture_on_commit_callbacks) -> dict:
    governed_memory(alice, assistant, django_capture_on_commit_callbacks)
    return bundle_of(alice)


def test_export_erase_import_through_the_api_gives_back_the_same_memory(api, alice, bundle, tenant):
    before = memory_of(alice)
    user_erase(end_user=alice, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    assert api.post("/api/v1/users/", {"external_id": "alice"}, format="json").status_code == 201

    response = api.post(URL.format("alice"), {"bundle": bundle}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["counts"]["pages"] == 12 and body["import_id"] and not body["already_imported"]
    assert memory_of(EndUser.objects.get(tenant=tenant, external_id="alice")) == before


def test_the_import_is_audited_with_the_token_as_actor(api, bundle, stranger, other_tenant):
    from tests.api.conftest import client_for, make_token

    globex = client_for(make_token(other_tenant))
    response = globex.post(URL.format("stranger"), {"bundle": bundle}, format="json", HTTP_X_REQUEST_ID="r-9")

    assert response.status_code == 201
    entry = AuditEntry.objects.get(action="memory.import")
    assert entry.actor_kind == "api_token" and entry.subject_id == stranger.pk and entry.request_id == "r-9"


def test_a_second_import_of_the_same_bundle_answers_already_imported_and_creates_nothing(
    stranger_api, bundle, stranger
):
    first = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")

    second = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")

    assert second.status_code == 200 and second.json()["already_imported"]
    assert second.json()["import_id"] == first.json()["import_id"]
    assert Page.objects.filter(space__end_user=stranger).count() == 12


def test_a_dry_run_says_what_would_be_created(stranger_api, bundle, stranger):
    response = stranger_api.post(URL.format("stranger"), {"bundle": bundle, "dry_run": True}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["dry_run"] and body["counts"]["pages"] == 12 and body["assistants"] == {"ava": "ava"}
    assert body["import_id"] is None and not Page.objects.filter(space__end_user=stranger).exists()


def test_an_invalid_bundle_is_a_400_naming_the_first_problem(stranger_api, bundle, stranger):
    bundle["knowledge"][1]["kind"] = "gossip"

    response = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert error["message"].startswith("The bundle is refused: $.knowledge[1].kind: 'gossip' is not one of")
    assert error["fields"]["bundle"][0].startswith("$.knowledge[1].kind")
    assert not Page.objects.filter(space__end_user=stranger).exists()


def test_paused_memory_is_a_409(stranger_api, bundle, stranger):
    from tests import builders

    builders.pause(builders.space_of(stranger, stranger.tenant.assistants.get(external_id="ava")))

    response = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")

    assert response.status_code == 409
    assert error_of(response)["code"] == "import_refused" and "paused" in error_of(response)["message"]


def test_a_deactivated_user_is_a_409_and_an_erased_one_is_not_found(stranger_api, bundle, stranger):
    type(stranger).objects.filter(pk=stranger.pk).update(is_active=False)
    response = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")
    assert response.status_code == 409 and error_of(response)["code"] == "deactivated"

    user_erase(end_user=stranger, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    response = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")
    assert response.status_code == 404


def test_another_tenants_token_gets_404_and_changes_nothing(stranger_api, bundle, alice):
    before = memory_of(alice)

    response = stranger_api.post(URL.format("alice"), {"bundle": bundle}, format="json")

    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert memory_of(alice) == before


def test_a_body_past_the_import_limit_is_a_413(stranger_api, bundle, stranger, settings):
    settings.MEMORY_IMPORT_MAX_BYTES = 2048

    response = stranger_api.post(URL.format("stranger"), {"bundle": bundle}, format="json")

    assert response.status_code == 413 and error_of(response)["code"] == "payload_too_large"


def test_a_bundle_that_is_not_an_object_is_a_validation_error(stranger_api, stranger):
    response = stranger_api.post(URL.format("stranger"), {"bundle": ["not", "an", "object"]}, format="json")

    assert response.status_code == 400 and "bundle" in error_of(response)["fields"]


def test_a_dry_run_reads_a_bounded_number_of_queries(stranger_api, bundle, stranger, django_assert_max_num_queries):
    with django_assert_max_num_queries(20):
        response = stranger_api.post(URL.format("stranger"), {"bundle": bundle, "dry_run": True}, format="json")
    assert response.status_code == 200
