"""Retrieval: STM, the best mid-term pages (fused from several channels), profile, knowledge and pinned memories,
in a bounded number of queries."""

from __future__ import annotations

import dataclasses
import math
from datetime import timedelta

import numpy as np
import pytest
from django.db import connection

from memory.models import HeatSample, Page, Segment
from memory.models.tiers import HeatEvent, KnowledgeKind, ReplySource, ReviewState
from memory.retrieval import channels, config, rows
from memory.retrieval import search as retrieval_search
from memory.retrieval.channels import query_terms
from memory.retrieval.config import DEFAULT, PAPER
from memory.retrieval.search import retrieve
from memory.services.embedding_state import embedder_for_store
from memory.services.visits import segment_visits_apply
from tests import builders
from tests.builders import T0

NOW = T0 + timedelta(days=2)
VECTOR_ONLY = dataclasses.replace(DEFAULT, lexical=False, time=False, neighbours=False)


@pytest.fixture
def memory(space):
    hiking = builders.segment_with_pages(
        space, summary="hiking mountains dog", messages=["hiking mountains with my dog"]
    )
    baking = builders.segment_with_pages(
        space, summary="baking sourdough bread", messages=["baking sourdough bread at home"]
    )
    builders.knowledge(space.end_user, text="The user hikes in the mountains with a dog")
    builders.knowledge(space.end_user, text="The user bakes sourdough bread")
    builders.knowledge(space.end_user, text="Promised trail maps", assistant=space.assistant)
    builders.profile(space.end_user, text="Likes the outdoors.")
    builders.turns(space, messages=["what should I do this weekend?"], start=T0)
    return {"hiking": hiking, "baking": baking}


def test_it_returns_short_term_memory_in_order_and_the_profile(space, memory):
    result = retrieve(space=space, query="weekend plans", now=NOW)
    assert [p.user_message for p in result.short_term] == ["what should I do this weekend?"]
    assert result.profile.text == "Likes the outdoors."


def test_the_best_matching_segment_and_its_page_come_first(space, memory):
    result = retrieve(space=space, query="hiking in the mountains with the dog", now=NOW)
    assert result.segments[0].segment == memory["hiking"]
    assert result.pages[0].page.user_message == "hiking mountains with my dog"
    assert result.pages[0].score > result.pages[-1].score or len(result.pages) == 1
    assert result.user_knowledge[0].entry.text == "The user hikes in the mountains with a dog"
    assert [k.entry.text for k in result.assistant_knowledge] == ["Promised trail maps"]


def test_used_lists_exactly_the_ids_and_scores_it_returned(space, memory):
    result = retrieve(space=space, query="sourdough bread", now=NOW)
    used = result.used()
    assert [p["id"] for p in used["pages"]] == [p.page.id for p in result.pages]
    assert [s["id"] for s in used["segments"]] == [s.segment.id for s in result.segments]
    assert used["profile_version_id"] == result.profile.id
    assert used["short_term_page_ids"] == [p.id for p in result.short_term]
    assert used["visited_segment_ids"] == sorted({p.page.segment_id for p in result.pages})


def test_segments_that_supplied_pages_are_visited_and_sampled_once_the_worker_counts_the_visits(space, memory):
    result = retrieve(space=space, query="sourdough bread", now=NOW)
    assert result.visited_segment_ids and set(Segment.objects.values_list("n_visit", flat=True)) == {0}

    assert segment_visits_apply() == len(result.visited_segment_ids)

    for segment_id in result.visited_segment_ids:
        segment = Segment.objects.get(pk=segment_id)
        assert segment.n_visit == 1 and segment.last_touched_at == NOW
        sample = HeatSample.objects.get(segment=segment, event=HeatEvent.VISITED)
        assert sample.n_visit == 1 and sample.r_recency == 1.0


def test_a_preview_records_no_visit(space, memory):
    retrieve(space=space, query="sourdough bread", now=NOW, record_visits=False)
    segment_visits_apply()
    assert set(Segment.objects.values_list("n_visit", flat=True)) == {0}
    assert not HeatSample.objects.exists()


def test_pinned_memories_are_always_included(space, memory):
    pinned = builders.knowledge(space.end_user, text="Allergic to peanuts", pinned=True)
    builders.flags_set(memory["baking"], pinned=True)
    result = retrieve(space=space, query="hiking", now=NOW)
    assert pinned in result.pinned_knowledge
    assert [s.id for s in result.pinned_segments] == [memory["baking"].id]


def test_another_users_memory_never_comes_back(space, memory, other_space):
    builders.segment_with_pages(
        other_space, summary="hiking mountains dog", messages=["gus hikes mountains with a dog"]
    )
    builders.knowledge(other_space.end_user, text="Gus hikes")
    result = retrieve(space=space, query="hiking mountains dog", now=NOW)
    assert all(p.page.space_id == space.id for p in result.pages)
    assert all(k.entry.end_user_id == space.end_user_id for k in result.user_knowledge)


def test_words_naming_a_space_match_no_space_lexeme(space, memory, other_space):
    builders.segment_with_pages(other_space, summary="bread", messages=[f"space {space.id} sourdough bread"])
    result = retrieve(space=space, query=f"space {space.id} sourdough", now=NOW)
    assert [p.page.user_message for p in result.pages if "words" in p.found_by] == ["baking sourdough bread at home"]


def test_a_page_whose_keys_collide_with_the_questions_is_found_by_words_only_if_it_holds_them_in_this_space(
    space, memory, other_space
):
    from django.db import connection

    builders.segment_with_pages(other_space, summary="bread", messages=["sourdough starter on the shelf"])
    with connection.cursor() as cursor:  # the worst collisions: every key of every space answers every question
        cursor.execute(
            "CREATE OR REPLACE FUNCTION memory_search_keys(space bigint, document tsvector) RETURNS integer[]"
            " LANGUAGE sql IMMUTABLE AS $$ SELECT ARRAY(SELECT DISTINCT unnest(search_keys) FROM memory_page) $$"
        )
    with connection.cursor() as cursor:  # the channel's own list, before loading (which names the space again)
        params = channels.lexical_params(space, ["sourdough"], rows.vector_text(np.zeros(256)))
        cursor.execute(channels.lexical_sql(1), params)
        found = [row[0] for row in cursor.fetchall()]
    assert found == list(
        Page.objects.filter(space=space, user_message__contains="sourdough").values_list("id", flat=True)
    )
    result = retrieve(space=space, query="sourdough", now=NOW)
    assert [p.page.user_message for p in result.pages if "words" in p.found_by] == ["baking sourdough bread at home"]


def test_a_words_idf_counts_the_pages_the_space_has_stored_deleted_ones_included(space):
    builders.page(space, user_message="my dog Biscuit", assistant_reply="Cute.")
    builders.page(space, user_message="a walk", assistant_reply="Nice.")
    builders.page(space, user_message="tax forms", assistant_reply="Ugh.").delete()
    with connection.cursor() as cursor:
        params = channels.lexical_params(space, ["biscuit"], rows.vector_text(np.zeros(256)))
        cursor.execute(channels.lexical_sql(1), params)
        (row,) = cursor.fetchall()
    stored, holding = 3, 1  # N is the space's page sequence, as Lucene counts deleted documents until merged away
    assert row[3] == pytest.approx(math.log(1 + (stored - holding + 0.5) / (holding + 0.5)))


def test_the_same_words_in_two_spaces_have_different_keys(space, other_space):
    mine = builders.page(space, user_message="Sourdough starter", assistant_reply="Feed it.")
    theirs = builders.page(other_space, user_message="Sourdough starter", assistant_reply="Feed it.")
    mine_keys, theirs_keys = (
        Page.objects.filter(pk=p.pk).values_list("search_keys", flat=True).get() for p in (mine, theirs)
    )
    assert len(mine_keys) == len(theirs_keys) == 3  # sourdough, starter, feed
    assert not set(mine_keys) & set(theirs_keys)


def test_the_vector_channel_re_ranks_its_first_pass_by_exact_cosine(space, memory, monkeypatch):
    errands = ["post office", "dry cleaning", "pharmacy", "bike repair", "library books", "car wash", "bakery", "bank"]
    messages = [f"errand today: {errand}" for errand in errands]
    builders.segment_with_pages(space, summary="errands", messages=messages)
    monkeypatch.setattr(retrieval_search, "VECTOR_POOL", 3)  # fewer pages than the space holds pass the first pass
    result = retrieve(space=space, query=messages[5], now=NOW, config=VECTOR_ONLY)
    assert result.pages[0].page.user_message == messages[5]
    assert result.pages[0].found_by["vector"] == pytest.approx(1.0)
    assert len(result.pages) == 3
    assert [p.score for p in result.pages] == sorted((p.score for p in result.pages), reverse=True)


def test_an_empty_query_returns_short_term_profile_and_pins_without_searching(space, memory):
    result = retrieve(space=space, query="   ", now=NOW)
    assert result.pages == [] and result.segments == [] and result.user_knowledge == []
    assert len(result.short_term) == 1


def test_retrieval_takes_a_fixed_number_of_queries_however_large_memory_is(space, memory, django_assert_num_queries):
    embedder_for_store()
    for i in range(30):
        builders.segment_with_pages(space, summary=f"topic {i} words", messages=[f"page about topic {i}"] * 3)
        builders.knowledge(space.end_user, text=f"fact number {i}")
    # one batch reads what needs only the question (STM and pinned pages, profile, pinned knowledge, segment
    # scores, knowledge, page vectors, page words); one reads the chosen pages and the segments shown; the visits
    with django_assert_num_queries(3):
        retrieve(space=space, query="topic 7 words", now=NOW)


def test_a_question_naming_a_date_takes_no_query_more(space, memory, django_assert_num_queries):
    embedder_for_store()
    with django_assert_num_queries(2):  # no visits queued: the two batches
        retrieve(space=space, query="what did I bake last winter?", now=NOW, record_visits=False)
    with django_assert_num_queries(2):  # the dated pages are one more statement of the first batch
        retrieve(space=space, query="what did I bake in January 2026?", now=NOW, record_visits=False)


def test_the_read_of_pinned_knowledge_is_answered_by_the_users_pinned_entries_alone(space):
    """Its index holds only pinned entries, so the read no longer walks all of a user's facts on every turn."""
    for i in range(80):
        builders.knowledge(space.end_user, text=f"fact {i}", pinned=i < 2, embedded=False)
        builders.knowledge(space.end_user, text=f"done {i}", assistant=space.assistant, embedded=False)
    params = {
        "user": space.end_user_id,
        "approved": ReviewState.APPROVED,
        "assistant": space.assistant_id,
        "user_kind": KnowledgeKind.USER,
    }
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_knowledgeentry")  # statistics as a user's 160 facts, 2 pinned, give them
        cursor.execute("SET LOCAL enable_seqscan = off")  # a test's few table pages would be read whole otherwise
        cursor.execute("EXPLAIN " + channels.PINNED_KNOWLEDGE_SQL, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "knowledge_user_pinned" in plan, plan


def test_the_pinned_segments_shown_are_answered_by_the_spaces_pinned_segments_alone(space):
    """The segments a result shows are read by id and by that index, not by walking the space's every segment."""
    segments = [builders.segment(space, summary=f"topic {i}", pinned=i == 0) for i in range(80)]
    params = {"space": space.id, "segments": [segments[5].id], "ids": [], "seqs": []}
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_segment")  # statistics as a space's 80 segments, 1 pinned, give them
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + channels.SEGMENTS_SHOWN_SQL, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute(channels.SEGMENTS_SHOWN_SQL, params)
        shown = [row[0] for row in cursor.fetchall()]
    assert "segment_space_pinned" in plan and "memory_segment_pkey" in plan, plan
    assert shown == [segments[0].id, segments[5].id]


def test_the_paper_pipeline_reads_only_the_top_segments_pages(space, memory, settings):
    settings.MEMORY_RETRIEVE_SEGMENTS = 1
    result = retrieve(space=space, query="hiking mountains dog", now=NOW, config=PAPER)
    assert {p.page.segment_id for p in result.pages} == {memory["hiking"].id}


def test_a_rare_word_is_found_by_the_words_channel_and_explained(space, memory):
    builders.segment_with_pages(space, summary="garden", messages=["my dog Biscuit digs up the courgettes"])
    result = retrieve(space=space, query="What does Biscuit do?", now=NOW)
    top = result.pages[0]
    assert top.page.user_message == "my dog Biscuit digs up the courgettes"
    assert top.found_by["words"] == ["biscuit"]
    assert "words 'biscuit'" in top.explanation() and "vector" in top.explanation()


def test_query_terms_drop_stopwords_and_repeats():
    assert query_terms("When did Melanie go camping in June, and did Melanie enjoy it?") == [
        "melanie",
        "camping",
        "june",
        "enjoy",
    ]


def test_pages_dated_in_the_range_a_question_names_are_found_by_date(space, memory):
    may = builders.segment_with_pages(
        space, summary="a concert", messages=["we saw a band play live"], at=T0.replace(month=5, day=20)
    )
    result = retrieve(space=space, query="What did I do in May 2026?", now=NOW)
    dated = [p for p in result.ranked if "date" in p.found_by]
    assert [p.page.segment_id for p in dated] == [may.id]
    assert dated[0].found_by["date"] == "May 2026"
    assert "date range May 2026" in dated[0].explanation()


def test_a_matched_fact_brings_its_source_pages_when_that_stage_is_on(space, memory):
    source = builders.segment_with_pages(space, summary="allergies", messages=["pollen makes me sneeze in spring"])
    fact = builders.knowledge(space.end_user, text="The user has hay fever")
    fact.source_pages.set(source.pages.all())
    with_facts = dataclasses.replace(DEFAULT, knowledge_pages=True)
    result = retrieve(space=space, query="does the user have hay fever?", now=NOW, config=with_facts)
    found = {p.page.id: p for p in result.ranked}
    page = source.pages.get()
    assert found[page.id].found_by["fact"] == fact.id


def test_the_turns_around_a_strong_hit_come_with_it_but_never_before_it(space, memory):
    builders.segment_with_pages(
        space,
        summary="a trip",
        messages=["we flew to Lisbon in March", "the food there was lovely", "my sister came along", "it was warm"],
    )
    any_neighbour = dataclasses.replace(config.DEFAULT, neighbour_floor=0.0)
    result = retrieve(space=space, query="Lisbon flight", now=NOW, config=any_neighbour)
    neighbours = [p for p in result.ranked if "neighbour" in p.found_by]
    assert "the food there was lovely" in [p.page.user_message for p in neighbours]
    order = [p.page.id for p in result.ranked]
    assert all(order.index(p.found_by["neighbour"]) < order.index(p.page.id) for p in neighbours)


def test_a_turn_next_to_a_hit_that_is_not_about_the_question_does_not_come_with_it(space, memory):
    builders.segment_with_pages(
        space,
        summary="a trip",
        messages=["we flew to Lisbon in March", "the food there was lovely", "my sister came along", "it was warm"],
    )
    result = retrieve(space=space, query="Lisbon flight", now=NOW)
    food = next(p for p in result.ranked if p.page.user_message == "the food there was lovely")
    assert "neighbour" not in food.found_by
    assert food.fused == food.score  # its own cosine, nothing borrowed from the hit


def test_an_unrelated_question_heats_no_segment(space, memory):
    result = retrieve(space=space, query="quantum chromodynamics lecture notes", now=NOW)
    segment_visits_apply()
    assert result.visited_segment_ids == []
    assert set(Segment.objects.values_list("n_visit", flat=True)) == {0}
    assert not HeatSample.objects.filter(event=HeatEvent.VISITED).exists()


def test_only_segments_that_supplied_a_relevant_page_are_visited(space, memory):
    result = retrieve(space=space, query="baking sourdough bread", now=NOW)
    assert result.visited_segment_ids == [memory["baking"].id]


def test_the_words_of_a_reply_the_system_wrote_are_not_searched(space):
    builders.page(
        space, user_message="Hello there.", assistant_reply="Offline zebracorn.", reply_source=ReplySource.SYSTEM
    )
    builders.page(space, user_message="Hi again.", assistant_reply="A zebracorn answer.")

    assert list(Page.objects.filter(search="zebracorn").values_list("assistant_reply", flat=True)) == [
        "A zebracorn answer."
    ]


def test_the_question_vector_reaches_postgresql_exactly(db):
    from django.db import connection

    vector = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::vector", [rows.vector_text(vector)])
        stored = cursor.fetchone()[0]  # pgvector's text form: the shortest digits of each float32
    assert np.array_equal(np.array(stored.strip("[]").split(","), dtype=np.float32), vector)


def test_with_server_side_binding_the_statements_go_one_by_one_and_find_the_same(
    space, memory, monkeypatch, django_assert_num_queries
):
    from django.db import connection

    batched = retrieve(space=space, query="hiking with my dog in May 2026", now=NOW, record_visits=False)
    options = {**connection.settings_dict.get("OPTIONS", {}), "server_side_binding": True}
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    with django_assert_num_queries(10):  # 8 statements (a date named), then the pages and the segments shown
        one_by_one = retrieve(space=space, query="hiking with my dog in May 2026", now=NOW, record_visits=False)
    assert one_by_one.used() == batched.used() and one_by_one.time_range == batched.time_range


def test_the_top_segments_are_shown_even_when_none_of_their_pages_is_loaded(space, settings):
    settings.MEMORY_RETRIEVE_PAGES = 1
    for i in range(8):  # segments whose summaries match the question, holding pages that do not
        builders.segment_with_pages(space, summary="watering plants in the garden", messages=[f"tax forms {i}"])
    for i in range(8):  # and the other way round: these pages are the ones loaded
        builders.segment_with_pages(space, summary=f"tax forms {i}", messages=["watering plants in the garden"])
    fused = retrieve(space=space, query="watering plants in the garden", now=NOW, record_visits=False)
    paper = retrieve(space=space, query="watering plants in the garden", now=NOW, record_visits=False, config=PAPER)
    assert len(fused.segments) == settings.MEMORY_RETRIEVE_SEGMENTS
    assert [s.segment.id for s in fused.segments] == [s.segment.id for s in paper.segments]
