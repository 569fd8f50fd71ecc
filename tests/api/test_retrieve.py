"""POST /api/v1/retrieve/: what memory holds for a query, with scores, and optionally the prompt; no LLM call."""

from __future__ import annotations

from datetime import timedelta

from memory.models import AuditEntry, Segment
from memory.services.supersession import knowledge_supersede
from memory.services.visits import segment_visits_apply
from tests import builders
from tests.api.conftest import error_of
from tests.builders import T0

URL = "/api/v1/retrieve/"


def ask(api, query: str = "How is my beagle Biscuit?", **extra):
    return api.post(URL, {"user": "alice", "assistant": "ava", "query": query} | extra, format="json")


def test_it_returns_every_tier_with_scores(api, memory):
    body = ask(api).json()

    assert {"short_term", "pages", "profile", "knowledge"} <= set(body)
    assert [p["id"] for p in body["short_term"]] == [memory.stm_page.pk]
    assert [p["id"] for p in body["pages"]] == [memory.mtm_page.pk]
    page = body["pages"][0]
    assert set(page) >= {"id", "score", "text"} and page["score"] > 0
    assert "Biscuit" in page["text"] and page["segment_id"] == memory.segment.pk
    assert body["profile"]["text"] == "Alice owns a beagle."
    assert [(k["id"], k["kind"]) for k in body["knowledge"]] == [(memory.knowledge.pk, "user")]
    assert body["knowledge"][0]["score"] > 0
    assert body["segments"][0]["id"] == memory.segment.pk
    assert "prompt" not in body


def test_it_counts_a_visit_to_the_segments_that_supplied_pages(api, memory):
    ask(api)
    segment_visits_apply()  # the worker, woken once the request commits

    assert Segment.objects.get().n_visit == 1


def test_record_visits_false_leaves_heat_alone(api, memory):
    ask(api, record_visits=False)
    segment_visits_apply()

    assert Segment.objects.get().n_visit == 0


def test_the_read_is_audited_with_the_token_as_actor(api, memory):
    ask(api)

    entry = AuditEntry.objects.filter(action="memory.read").get()
    assert entry.actor_kind == "api_token" and entry.end_user == memory.mtm_page.space.end_user
    assert entry.detail == {"what": "api retrieve"}


def test_it_can_include_the_assembled_prompt(api, memory):
    body = ask(api, include_prompt=True).json()

    assert "<memory>" in body["prompt"] and "Biscuit" in body["prompt"]
    assert body["prompt"].rstrip().endswith("How is my beagle Biscuit?")


def test_pinned_knowledge_is_always_included(api, memory):
    api.patch(f"/api/v1/knowledge/{memory.knowledge.pk}/", {"pinned": True, "reason": "key fact"}, format="json")

    body = ask(api, query="").json()

    assert [(k["id"], k["pinned"], k["score"]) for k in body["knowledge"]] == [(memory.knowledge.pk, True, None)]


def test_an_unknown_user_or_assistant_is_not_found(api, memory):
    assert ask(api).status_code == 200
    assert api.post(URL, {"user": "nobody", "assistant": "ava", "query": "x"}, format="json").status_code == 404
    assert api.post(URL, {"user": "alice", "assistant": "nobody", "query": "x"}, format="json").status_code == 404


def test_a_missing_query_is_a_validation_error(api, memory):
    response = api.post(URL, {"user": "alice", "assistant": "ava"}, format="json")

    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["query"]


def test_it_names_the_turns_no_longer_current_and_what_replaced_them(api, alice, assistant):
    space = builders.space_of(alice, assistant)
    builders.turn(space, user_message="I drink a flat white every morning.", at=T0)
    builders.turn(space, user_message="Actually I've given up coffee, I now drink green tea.", at=T0 + timedelta(1))

    body = ask(api, "What do I drink in the morning?").json()

    [earlier] = body["earlier"]
    assert (earlier["slot"], earlier["value"], earlier["replaced_by"]["kind"]) == ("drink", "green tea", "page")
    flat_white = next(p for p in body["short_term"] if "flat white" in p["user_message"])
    assert earlier["page_id"] == flat_white["id"]


def test_a_current_fact_says_what_it_replaced(api, alice, assistant):
    old = builders.knowledge(alice, text="The user lives in Porto.")
    new = builders.knowledge(alice, text="The user moved to Leeds.")
    knowledge_supersede(entries=[new])

    [fact] = ask(api, "Where does the user live?").json()["knowledge"]

    assert fact["id"] == new.pk and fact["replaced"] == old.text and fact["replaced_until"] is not None
