"""The end user's "Download my memory" is a zip: a page they can read (turns, topics, profile and facts in plain
words, every value escaped) and a JSON file without vectors; each download is audited."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from memory.models import AuditEntry
from memory.steps.offline_steps import PROFILE_HEADER
from tests import builders

URL = "/chat/ava/memory/export/"


@pytest.fixture
def remembered(client, space, alice, assistant):
    client.force_login(alice.account)
    builders.profile(alice, text=f"{PROFILE_HEADER}\n- The user is vegetarian.")
    builders.knowledge(alice, text="The user has a sister in Lyon.")
    builders.segment_with_pages(space, summary="Lisbon holiday in May", messages=["I am going to Lisbon in May"])
    builders.page(space, user_message="I bake sourdough <b>bread</b>.", assistant_reply="Lovely!")


def _members(response) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(response.content)) as bundle:
        return {name: bundle.read(name).decode() for name in bundle.namelist()}


def test_the_download_is_a_zip_of_a_readable_page_and_json(client, remembered):
    response = client.post(URL)

    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith('attachment; filename="memory-acme-alice-')
    assert response["Content-Disposition"].endswith('.zip"')
    assert set(_members(response)) == {"my-memory.html", "my-memory.json"}


def test_the_page_tells_turns_topics_profile_and_facts_in_plain_words(client, remembered):
    page = _members(client.post(URL))["my-memory.html"]

    assert "You are vegetarian." in page and "You have a sister in Lyon." in page
    assert "Lisbon holiday in May" in page and "I am going to Lisbon in May" in page
    assert "The user" not in page and PROFILE_HEADER not in page


def test_the_page_escapes_what_the_user_wrote(client, remembered):
    page = _members(client.post(URL))["my-memory.html"]

    assert "sourdough &lt;b&gt;bread&lt;/b&gt;" in page and "<b>bread</b>" not in page


def test_no_vector_appears_in_the_json(client, remembered):
    members = _members(client.post(URL))
    data = json.loads(members["my-memory.json"])

    assert data["end_user"]["external_id"] == "alice"
    assert {k["text"] for k in data["knowledge"]} == {"The user has a sister in Lyon."}
    assert "embedding" not in members["my-memory.json"] and "vector" not in members["my-memory.json"]


def test_the_download_is_much_smaller_than_the_vectors_would_make_it(client, remembered):
    assert len(client.post(URL).content) < 10_000


def test_each_download_is_audited(client, remembered, alice):
    client.post(URL)

    audit = AuditEntry.objects.get(action="memory.read")
    assert (audit.actor_kind, audit.end_user, audit.detail) == (
        "end_user",
        alice,
        {"what": "export downloaded by the end user"},
    )
