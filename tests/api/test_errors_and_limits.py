"""Every error has the same shape, whatever raised it; requests past the token's rate limit get 429."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.api.conftest import client_for, error_of, make_token


def test_an_unknown_path_is_a_structured_404(api, tenant):
    for path in ("/api/v1/nothing-here/", "/api/v1/pages/1/nope/", "/api/v1/turns"):
        response = api.get(path)
        assert response.status_code == 404, path
        assert error_of(response) == {"code": "not_found", "message": "No such endpoint.", "fields": {}}


def test_a_missing_object_is_a_structured_404_that_names_it(api, tenant):
    response = api.get("/api/v1/data-subject-requests/999999/")

    assert response.status_code == 404
    assert error_of(response) == {"code": "not_found", "message": "No such data subject request.", "fields": {}}


def test_a_wrong_method_is_a_structured_405(api, tenant):
    response = api.delete("/api/v1/turns/")

    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


def test_a_json_body_that_is_not_an_object_is_a_validation_error(api, tenant):
    response = api.post("/api/v1/turns/", ["a", "list"], format="json")

    assert response.status_code == 400
    assert error_of(response)["code"] == "validation_error"


def test_wrong_types_are_named_field_by_field(api, tenant):
    body = {"user": ["alice"], "assistant": True, "query": {"not": "text"}, "include_prompt": "perhaps"}

    response = api.post("/api/v1/retrieve/", body, format="json")

    assert response.status_code == 400
    assert set(error_of(response)["fields"]) == {"user", "assistant", "query", "include_prompt"}


def test_invalid_utf8_in_any_json_body_is_a_400(api, memory):
    for url in ("/api/v1/chat/", "/api/v1/retrieve/", f"/api/v1/pages/{memory.mtm_page.pk}/forget/"):
        response = api.post(url, b'{"reason": "\xff\xfe"}', content_type="application/json")
        assert response.status_code == 400, url
        assert error_of(response)["code"] == "parse_error"


def test_lone_surrogates_are_refused_not_stored(api, tenant):
    body = b'{"user": "alice", "assistant": "ava", "user_message": "\\ud800", "assistant_reply": "b"}'

    response = api.post("/api/v1/turns/", body, content_type="application/json")

    assert response.status_code == 400
    assert "user_message" in error_of(response)["fields"]


def test_requests_past_the_rate_limit_get_429_with_retry_after(tenant, settings):
    settings.API_RATE_LIMIT = "3/min"
    cache.clear()
    client = client_for(make_token(tenant))

    statuses = [client.get("/api/v1/users/").status_code for _ in range(4)]

    assert statuses == [200, 200, 200, 429]
    response = client.get("/api/v1/users/")
    assert error_of(response)["code"] == "throttled"
    assert int(response["Retry-After"]) > 0


def test_the_rate_limit_counts_per_token(tenant, settings):
    settings.API_RATE_LIMIT = "2/min"
    cache.clear()
    first, second = client_for(make_token(tenant)), client_for(make_token(tenant))

    assert [first.get("/api/v1/users/").status_code for _ in range(3)] == [200, 200, 429]
    assert second.get("/api/v1/users/").status_code == 200


def test_an_empty_rate_limit_means_no_limit(api, tenant, settings):
    settings.API_RATE_LIMIT = ""

    assert {api.get("/api/v1/users/").status_code for _ in range(5)} == {200}


def test_an_unexpected_error_is_a_structured_500(api, tenant, monkeypatch):
    from api.views import people

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(people, "end_user_list", broken)

    response = api.get("/api/v1/users/")

    assert response.status_code == 500
    assert error_of(response) == {"code": "server_error", "message": "Something went wrong on our side.", "fields": {}}


def test_a_body_past_the_upload_limit_is_a_structured_413(api, tenant, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = b'{"user": "alice", "assistant": "ava", "user_message": "' + b"x" * 2000 + b'", "assistant_reply": "b"}'

    response = api.post("/api/v1/turns/", body, content_type="application/json")

    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"


@pytest.mark.parametrize("depth", [33, 100_000])
def test_a_deeply_nested_body_is_a_structured_400(api, tenant, depth):
    body = b'{"user": "alice", "assistant": "ava", "query": ' + b"[" * depth + b"]" * depth + b"}"

    response = api.post("/api/v1/retrieve/", body, content_type="application/json")

    assert response.status_code == 400
    assert error_of(response)["code"] == "parse_error" and "nested" in error_of(response)["message"]


def test_a_body_nested_within_the_bound_is_parsed(api, tenant):
    body = b'{"user": "alice", "assistant": "ava", "query": ' + b"[" * 30 + b"]" * 30 + b"}"

    response = api.post("/api/v1/retrieve/", body, content_type="application/json")

    assert response.status_code == 400 and "query" in error_of(response)["fields"]
