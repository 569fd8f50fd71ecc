"""POST /api/v1/turns/: an external agent records the turns it generated; a retried POST does not record twice."""

from __future__ import annotations

import pytest

from memory.models import EndUser, IdempotentRequest, Page
from memory.models.tiers import PageSource, Tier
from memory.services.audit import Actor
from memory.services.tenancy import end_user_set_active
from tests.api.conftest import error_of

URL = "/api/v1/turns/"


def turn(**overrides) -> dict:
    return {
        "user": "alice",
        "assistant": "ava",
        "user_message": "Hi, I'm Alice.",
        "assistant_reply": "Hello!",
    } | overrides


def test_it_records_a_turn_and_answers_the_page_id(api, alice):
    response = api.post(URL, turn(), format="json")

    assert response.status_code == 201
    assert set(response.json()) == {"page_id", "queued_updating"}
    page = Page.objects.get(pk=response.json()["page_id"])
    assert (page.user_message, page.assistant_reply, page.source) == ("Hi, I'm Alice.", "Hello!", PageSource.API)
    assert page.space.end_user == alice and page.tier == Tier.SHORT_TERM
    assert response.json()["queued_updating"] is False


def test_it_creates_the_end_user_when_new(api, tenant):
    response = api.post(URL, turn(user="carol-42"), format="json")

    assert response.status_code == 201
    assert EndUser.objects.filter(tenant=tenant, external_id="carol-42").exists()


def test_it_keeps_the_given_time(api, alice):
    response = api.post(URL, turn(at="2025-03-01T10:00:00+01:00"), format="json")

    assert Page.objects.get(pk=response.json()["page_id"]).at.isoformat() == "2025-03-01T09:00:00+00:00"


def test_the_turn_past_short_term_capacity_queues_updating(api, alice, settings):
    settings.MEMORY_STM_CAPACITY = 2
    answers = [api.post(URL, turn(user_message=f"Message {i}"), format="json").json() for i in range(3)]

    assert [a["queued_updating"] for a in answers] == [False, False, True]
    assert Page.objects.filter(space__end_user=alice, tier=Tier.MID_TERM).count() == 1


def test_an_unknown_assistant_is_not_found_and_no_user_is_created(api, tenant):
    response = api.post(URL, turn(user="dave", assistant="nobody"), format="json")

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"
    assert not EndUser.objects.filter(external_id="dave").exists()


def test_a_deactivated_user_cannot_get_new_turns(api, alice):
    end_user_set_active(end_user=alice, active=False, actor=Actor.system("test"))

    response = api.post(URL, turn(), format="json")

    assert response.status_code == 409
    assert error_of(response)["code"] == "deactivated"
    assert not Page.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"assistant": "ava", "user_message": "a", "assistant_reply": "b"}, "user"),
        (turn(user_message=""), "user_message"),
        (turn(user_message="   "), "user_message"),
        (turn(assistant_reply=None), "assistant_reply"),
        (turn(user_message=["not", "text"]), "user_message"),
        (turn(user="has spaces"), "user"),
        (turn(user="x" * 129), "user"),
        (turn(at="yesterday"), "at"),
        (turn(user_message="nul \x00 inside"), "user_message"),
    ],
)
def test_bad_input_is_a_structured_400_naming_the_field(api, tenant, body, field):
    response = api.post(URL, body, format="json")

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert field in error["fields"], error
    assert not Page.objects.exists()


def test_a_message_longer_than_the_limit_is_refused(api, tenant, settings):
    settings.MEMORY_MESSAGE_MAX_CHARS = 50

    response = api.post(URL, turn(user_message="x" * 51), format="json")

    assert response.status_code == 400
    assert "user_message" in error_of(response)["fields"]


def test_a_body_that_is_not_utf8_is_a_structured_400(api, tenant):
    response = api.post(URL, b'{"user": "alice", "user_message": "caf\xe9"}', content_type="application/json")

    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error"


def test_a_body_that_is_not_json_is_a_structured_400(api, tenant):
    response = api.post(URL, b"user=alice", content_type="application/json")

    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error"


def test_a_form_body_is_refused_as_unsupported(api, tenant):
    response = api.post(URL, {"user": "alice"})  # multipart

    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


# --- Idempotency ----------------------------------------------------------------------------------------------


def test_a_retried_post_with_the_same_key_returns_the_first_answer_and_records_once(api, alice):
    first = api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    again = api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="key-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert Page.objects.count() == 1


def test_the_same_key_with_another_body_is_a_conflict(api, alice):
    api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="key-1")

    response = api.post(URL, turn(user_message="Something else"), format="json", HTTP_IDEMPOTENCY_KEY="key-1")

    assert response.status_code == 409
    assert error_of(response)["code"] == "idempotency_key_reused"
    assert Page.objects.count() == 1


def test_different_keys_record_different_turns(api, alice):
    api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="key-2")

    assert Page.objects.count() == 2


def test_a_failed_request_leaves_its_key_free_for_the_retry(api, tenant):
    failed = api.post(URL, turn(assistant="nobody"), format="json", HTTP_IDEMPOTENCY_KEY="key-1")
    retried = api.post(URL, turn(assistant="nobody"), format="json", HTTP_IDEMPOTENCY_KEY="key-1")

    assert failed.status_code == retried.status_code == 404
    assert not IdempotentRequest.objects.exists()


def test_keys_belong_to_the_tenant(api, stranger_api, alice, stranger):
    api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="shared-key")

    response = stranger_api.post(URL, turn(user="stranger"), format="json", HTTP_IDEMPOTENCY_KEY="shared-key")

    assert response.status_code == 201
    assert Page.objects.count() == 2


def test_the_stored_answer_goes_with_the_end_user(api, alice):
    api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY="key-1")

    assert IdempotentRequest.objects.get().end_user == alice


@pytest.mark.parametrize("key", ["", "with space", "k" * 101, "clé"])
def test_a_malformed_key_is_refused(api, alice, key):
    response = api.post(URL, turn(), format="json", HTTP_IDEMPOTENCY_KEY=key)

    assert response.status_code == 400
    assert "Idempotency-Key" in error_of(response)["fields"]
