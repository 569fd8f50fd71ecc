"""Long pages are memory too: a page longer than the embedder reads is embedded in overlapping passages as well,
and the vector channel finds it by its best passage, whatever part of it a question is about."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest

from memory.bundles import bundle_fingerprint
from memory.embeddings import use_embedder
from memory.models import Page, PagePassage
from memory.retrieval.config import DEFAULT
from memory.retrieval.search import retrieve
from memory.selectors.gdpr import user_export_data
from memory.services import passages
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.governance import page_forget
from memory.services.personal_data import personal_data_scan_start
from memory.services.reembed import memory_reembed
from memory.services.turns import InvalidTurn, turn_record
from memory.text import PASSAGE_CHARS, passage_holding, passage_span_at, passage_spans
from tests import builders
from tests.fakes import HashingEmbedder

VECTOR_ONLY = dataclasses.replace(DEFAULT, lexical=False, time=False, neighbours=False)
OPERATOR = Actor("operator", "1", "sam")
ENDING = (
    "Metrics exporter port: our exporter listens on port 9464. Which port to open in our firewall? Port 9464, "
    "for the metrics exporter behind our firewall, and only that port."
)
QUESTION = "Which port does our metrics exporter listen on behind our firewall?"


@pytest.fixture(autouse=True)
def embedder():
    """An embedder that, like MiniLM, reads only the start of a text (about its first 256 word pieces)."""
    with use_embedder(HashingEmbedder(reads_chars=PASSAGE_CHARS)) as fake:
        yield fake


def placed_long_page(space, capture, *, reply: str) -> Page:
    """A long turn recorded, then pushed out of short-term memory by the next turn and placed (embedded)."""
    builders.segment_with_pages(space, summary="metrics dashboards", messages=["I like metrics dashboards at home."])
    long = builders.turn(space, user_message="How do I ship the release?", assistant_reply=reply).page
    builders.stm_push_out(space, capture)
    long.refresh_from_db()
    assert long.tier == "mtm" and long.segment_id is not None
    return long


def test_a_short_text_has_no_passages_and_a_long_one_is_covered_by_overlapping_windows():
    text = builders.long_reply(chars=20_000, ending=ENDING)

    spans = passage_spans(text)

    assert passage_spans("x" * PASSAGE_CHARS) == []
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(0 < end - start <= PASSAGE_CHARS for start, end in spans)
    assert all(start < before_end for (_, before_end), (start, _) in itertools.pairwise(spans))
    assert all(text[end - 1] in "\n .`" or end == len(text) for _, end in spans)  # whole lines and sentences
    assert any(ENDING in text[start:end] for start, end in spans)
    assert passage_span_at(text, spans[3][0]) == spans[3] and passage_span_at(text, 1) is None


def test_a_placed_long_page_is_embedded_with_its_passages_in_one_embedder_call(
    space, embedder, django_capture_on_commit_callbacks
):
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))

    spans = passage_spans(long.memory_text)
    stored = list(PagePassage.objects.filter(page=long).order_by("start").values_list("start", "end", "space_id"))
    assert len(spans) > 40 and [(start, end) for start, end, _ in stored] == spans
    assert {space_id for *_, space_id in stored} == {space.id}
    first = embedder.inputs.index(long.memory_text)
    assert embedder.inputs[first + 1 : first + 1 + len(spans)] == [long.memory_text[s:e] for s, e in spans]
    assert not PagePassage.objects.exclude(page=long).exists()  # short pages have none


def test_a_question_about_a_sentence_near_the_end_finds_the_page_through_its_passage(
    space, django_capture_on_commit_callbacks
):
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))

    result = retrieve(space=space, query=QUESTION, config=VECTOR_ONLY, record_visits=False)

    best = result.pages[0]
    assert best.page == long
    start = best.found_by["passage"]
    start, end = passage_span_at(long.memory_text, start)
    assert ENDING in long.memory_text[start:end] and start > 45_000
    assert best.found_by["vector"] > result.pages[1].score
    assert best.score == pytest.approx(best.found_by["vector"])  # the page scores its best passage's cosine


def test_without_passages_a_question_about_the_end_of_a_long_page_misses_it(
    space, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(passages, "passage_spans", lambda text: [])  # the page's own vector only
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))

    result = retrieve(space=space, query=QUESTION, config=VECTOR_ONLY, record_visits=False)

    assert not PagePassage.objects.exists()
    assert result.pages[0].page != long


def test_forgetting_a_long_page_deletes_its_passages(space, django_capture_on_commit_callbacks):
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))

    page_forget(page=long, actor=OPERATOR, reason="asked to")

    assert not PagePassage.objects.exists()
    result = retrieve(space=space, query=QUESTION, config=VECTOR_ONLY, record_visits=False)
    assert long.pk not in [p.page.pk for p in result.pages]


def test_erasing_the_user_deletes_every_passage(space, django_capture_on_commit_callbacks):
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))
    passages = PagePassage.objects.filter(page=long).count()

    erasure = user_erase(end_user=space.end_user, actor=OPERATOR, legal_basis="art17", dry_run=False)

    assert erasure.receipt is not None and not PagePassage.objects.exists()
    assert erasure.receipt.counts["memory_pagepassage"] == passages > 40


def test_a_new_embedder_recomputes_the_passages(space, django_capture_on_commit_callbacks):
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))
    before = PagePassage.objects.filter(page=long).count()
    other = HashingEmbedder(dimension=256, reads_chars=PASSAGE_CHARS)
    other.name = "test:other"

    memory_reembed(embedder=other)

    assert PagePassage.objects.filter(page=long).count() == before
    assert {long.memory_text[s:e] for s, e in passage_spans(long.memory_text)} <= set(other.inputs)


def test_a_turn_of_64000_characters_with_code_is_stored_and_searched_to_its_last_word(space):
    reply = builders.long_reply(chars=64_000, ending="The zanzibarian checksum lives in verify_zanzibar().")
    assert len(reply) == 64_000

    page = turn_record(
        end_user=space.end_user, assistant=space.assistant, user_message="Review my code?", assistant_reply=reply
    ).page
    result = retrieve(space=space, query="where is the zanzibarian checksum?", record_visits=False)

    assert Page.objects.get(pk=page.pk).assistant_reply == reply
    found = {scored.page.id: scored.found_by for scored in result.ranked}
    assert found[page.id]["words"] == ["zanzibarian", "checksum"]


def test_a_turn_past_the_limit_is_refused_and_nothing_is_stored(space):
    with pytest.raises(InvalidTurn, match="assistant_reply is longer than 64000 characters"):
        turn_record(end_user=space.end_user, assistant=space.assistant, user_message="Hi", assistant_reply="x" * 64_001)

    assert not Page.objects.exists()


def test_the_export_holds_a_long_pages_passages_and_its_fingerprint_leaves_them_out(
    space, django_capture_on_commit_callbacks
):
    long = placed_long_page(space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=ENDING))

    bundle = user_export_data(end_user=space.end_user)

    exported = next(page for page in bundle["memory"][0]["pages"] if page["id"] == long.id)
    assert [(p["start"], p["end"]) for p in exported["passages"]] == passage_spans(long.memory_text)
    assert all(len(p["embedding"]) == 256 for p in exported["passages"])
    without = json.loads(json.dumps(bundle))
    for page in without["memory"][0]["pages"]:
        page.pop("passages")
    assert bundle_fingerprint(bundle) == bundle_fingerprint(without)


def last_passage_is_embedded_from(page: Page, embedder) -> bool:
    """Whether the page's last passage is stored with the vector of its text as the page reads now."""
    page.refresh_from_db()
    start, end = passage_spans(page.memory_text)[-1]
    stored = PagePassage.objects.get(page=page, start=start)
    expected = embedder.embed([page.memory_text[start:end]])[0]
    return stored.end == end and builders.same_page_vector(stored.embedding, expected)


def test_forgetting_what_a_long_page_quotes_embeds_its_passages_again(
    space, embedder, django_capture_on_commit_callbacks
):
    said = "My bicycle lock code is the year my grandmother crossed the Atlantic on the Queen Mary."
    forgotten = builders.turn(space, user_message=said).page
    long = placed_long_page(
        space, django_capture_on_commit_callbacks, reply=builders.long_reply(ending=f"{ENDING} You said: {said}")
    )

    page_forget(page=forgotten, actor=OPERATOR, reason="the user asked")

    long.refresh_from_db()
    assert said not in long.memory_text and "[forgotten]" in long.memory_text
    assert last_passage_is_embedded_from(long, embedder)
    assert [(p.start, p.end) for p in PagePassage.objects.filter(page=long).order_by("start")] == passage_spans(
        long.memory_text
    )


def test_a_rescan_that_redacts_a_long_page_embeds_its_passages_again(
    space, embedder, django_capture_on_commit_callbacks
):
    long = placed_long_page(
        space,
        django_capture_on_commit_callbacks,
        reply=builders.long_reply(ending=f"{ENDING} Mail the on-call engineer at ops.lead@example.com."),
    )
    builders.personal_data_policy(space.tenant, email="do_not_store")

    with django_capture_on_commit_callbacks(execute=True):
        personal_data_scan_start(tenant=space.tenant, actor=OPERATOR)

    long.refresh_from_db()
    assert "ops.lead@example.com" not in long.memory_text and "[email]" in long.memory_text
    assert last_passage_is_embedded_from(long, embedder)


def test_a_search_shows_the_passage_that_holds_its_words_even_after_text_that_casefolds_longer():
    text = "Straße " * 20 + builders.long_reply(chars=20_000, ending="The ZANZIBAR checksum lives in verify().")

    start, end = passage_holding(text, "zanzibar checksum")

    assert "ZANZIBAR checksum" in text[start:end]
    assert passage_holding(text, "checksum of zanzibar") == (start, end)  # most of its words
    assert passage_holding(text, "nowhere") is None and passage_holding("A short turn.", "short") is None
