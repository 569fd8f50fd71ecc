"""A long page shows the passage that matched, not its first characters: in the context preview (as the prompt
quotes it) and in the console's search, as a full page and as the HTMX fragment."""

from __future__ import annotations

import pytest

from memory.embeddings import use_embedder
from memory.text import PASSAGE_CHARS
from tests import builders
from tests.dashboard.conftest import HX
from tests.fakes import HashingEmbedder

ENDING = (
    "Metrics exporter port: our exporter listens on port 9464. Which port to open in our firewall? Port 9464, "
    "for the metrics exporter behind our firewall, and only that port."
)
QUESTION = "Which port does our metrics exporter listen on behind our firewall?"
OPENING = "Step 1. The parser reads every token once"


@pytest.fixture(autouse=True)
def embedder():
    """An embedder that, like MiniLM, reads only the start of a text (about its first 256 word pieces)."""
    with use_embedder(HashingEmbedder(reads_chars=PASSAGE_CHARS)) as fake:
        yield fake


@pytest.fixture
def long_page(alice, assistant, django_capture_on_commit_callbacks):
    space = builders.space_of(alice, assistant)
    reply = builders.long_reply(chars=50_000, ending=ENDING)
    page = builders.turn(space, user_message="How do I ship the release?", assistant_reply=reply).page
    builders.stm_push_out(space, django_capture_on_commit_callbacks)
    return page


def test_the_context_preview_quotes_the_passage_of_a_long_page_that_matched(client, agent_user, alice, long_page):
    client.force_login(agent_user)

    for headers in ({}, HX):
        response = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": QUESTION}, **headers)

        earlier = response.context["preview"].sections[3].items
        item = next(item for item in earlier if item.id == long_page.id)
        assert "a passage of a long turn (characters" in item.text and "port 9464" in item.text
        assert OPENING not in item.text and len(item.text) < 2 * PASSAGE_CHARS
        body = response.content.decode()
        assert "its passage at character" in body and "port 9464" in body
        assert ("<html" in body) == (headers == {})


def test_the_console_search_shows_the_passage_of_a_long_page_that_holds_the_words(client, agent_user, alice, long_page):
    client.force_login(agent_user)

    for headers in ({}, HX):
        response = client.get(f"/console/acme/users/{alice.pk}/", {"q": "port 9464"}, **headers)

        found = response.context["found"]
        assert [page.id for page in found.pages] == [long_page.id]
        assert "port 9464" in found.excerpts[long_page.id] and OPENING not in found.excerpts[long_page.id]
        body = response.content.decode()
        assert "The passage that matched" in body and "our exporter listens on port 9464" in body
        assert OPENING not in body
