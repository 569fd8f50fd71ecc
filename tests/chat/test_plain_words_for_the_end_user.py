"""The end user reads their profile and facts in the second person ("You are vegetarian"), never the internal
wording the memory steps store ("Profile (offline mode, extractive):", "The user is …")."""

from __future__ import annotations

import re

import pytest

from memory.steps.offline_steps import PROFILE_HEADER
from tests import builders


@pytest.fixture
def remembered(space, alice, client):
    client.force_login(alice.account)
    builders.profile(alice, text=f"{PROFILE_HEADER}\n- The user is vegetarian.\n- The user's dog is called Rex.")
    builders.knowledge(alice, text="The user has a sister in Lyon.")


def _shown_text(body: str) -> str:
    """The page's text outside the correction forms (which hold the stored wording to edit)."""
    return re.sub(r"<textarea.*?</textarea>", "", body, flags=re.DOTALL)


def test_the_profile_is_told_in_the_second_person_without_its_header(client, remembered):
    body = _shown_text(client.get("/chat/ava/memory/").content.decode())

    assert "You are vegetarian." in body and "Your dog is called Rex." in body
    assert PROFILE_HEADER not in body and "extractive" not in body


def test_facts_are_told_in_the_second_person(client, remembered):
    body = _shown_text(client.get("/chat/ava/memory/").content.decode())

    assert "You have a sister in Lyon." in body
    assert "The user" not in body and "the user" not in body


def test_a_search_result_tells_the_profile_in_the_second_person(client, remembered):
    body = _shown_text(client.get("/chat/ava/memory/", {"q": "vegetarian"}).content.decode())

    assert "You are vegetarian." in body
    assert "The user" not in body and PROFILE_HEADER not in body
