"""A user under legal hold: every forget and a real erasure over the API answer 409 with a clear message; a dry
run still answers."""

from __future__ import annotations

import pytest

from memory.models import EndUser, Page
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from tests.api.conftest import error_of


@pytest.fixture
def held(alice, memory):
    legal_hold_place(end_user=alice, actor=Actor("operator", "9", "dana"), reason="litigation 2026-114")
    return memory


@pytest.mark.parametrize("route", ["pages/{mtm_page}", "segments/{segment}", "knowledge/{knowledge}"])
def test_forgetting_an_item_of_a_user_on_hold_answers_409(api, held, route):
    ids = {"mtm_page": held.mtm_page.pk, "segment": held.segment.pk, "knowledge": held.knowledge.pk}
    response = api.post(f"/api/v1/{route.format(**ids)}/forget/", {"reason": "asked"}, format="json")
    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "legal_hold" and "under a legal hold" in error["message"]
    assert Page.objects.filter(pk=held.mtm_page.pk).exists()


def test_forgetting_a_profile_version_of_a_user_on_hold_answers_409(api, held):
    response = api.post(f"/api/v1/profile-versions/{held.profile.pk}/forget/", {"reason": "x"}, format="json")
    assert response.status_code == 409 and error_of(response)["code"] == "legal_hold"


def test_a_real_erasure_answers_409_and_the_user_stays(api, held, alice):
    response = api.post("/api/v1/users/alice/erasure/", {"dry_run": False, "reason": "asked"}, format="json")
    assert response.status_code == 409
    assert "Erasure is suspended" in error_of(response)["message"]
    assert EndUser.objects.get(pk=alice.pk).is_active


def test_a_dry_run_still_answers(api, held):
    response = api.post("/api/v1/users/alice/erasure/", {"dry_run": True, "reason": "asked"}, format="json")
    assert response.status_code == 200 and response.json()["counts"]["memory_page"] == 2
