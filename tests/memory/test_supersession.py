"""A fact promotion learns replaces the current fact of the same thing: the old one becomes history, exactly once."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from memory.llm import use_llm
from memory.models import AuditEntry, KnowledgeEntry, MemoryEvent, ReviewState
from memory.models.events import EventKind
from memory.services.promotion import segment_promote
from tests import builders
from tests.builders import T0
from tests.fakes import ScriptedLLM

NOW = T0 + timedelta(days=30)


@pytest.fixture
def llm_mode(settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"


def _promote(space, *messages, at=T0, summary="mornings"):
    segment = builders.segment_with_pages(space, summary=summary, messages=list(messages), at=at, l_interaction=9)
    return segment_promote(segment_id=segment.id, now=NOW)


def _fact(space, words: str) -> KnowledgeEntry:
    return KnowledgeEntry.objects.get(end_user=space.end_user, text__icontains=words)


def test_offline_a_later_value_of_the_same_slot_supersedes_the_earlier_fact(space):
    _promote(space, "I drink a flat white every morning.")
    _promote(space, "Actually I've given up coffee, I now drink green tea.", at=T0 + timedelta(days=3))
    old, new = _fact(space, "flat white"), _fact(space, "green tea")
    assert old.superseded_by_id == new.id and old.valid_to == new.valid_from == T0 + timedelta(days=3)
    assert new.valid_to is None and new.slot == "drink" and old.slot == "drink"


def test_two_values_in_one_promotion_leave_the_later_one_current(space):
    _promote(space, "I live in Porto.", "Big news: we moved to Leeds!")
    assert _fact(space, "Porto").superseded_by_id == _fact(space, "Leeds").id
    assert _fact(space, "Leeds").valid_to is None


def test_facts_of_other_slots_or_the_same_value_stay_current(space):
    _promote(space, "I live in Porto.", "I drink a flat white every morning.")
    _promote(space, "I work at Arcadis.", "I still drink a flat white every morning, always.", at=T0 + timedelta(1))
    assert not KnowledgeEntry.objects.filter(end_user=space.end_user, valid_to__isnull=False).exists()


def test_the_supersession_is_audited_and_recorded_on_the_promotion(space):
    _promote(space, "I live in Porto.")
    report = _promote(space, "We relocated to Leeds.", at=T0 + timedelta(days=2))
    old, new = _fact(space, "Porto"), _fact(space, "Leeds")
    assert [(s.earlier_id, s.later_id, s.by) for s in report.superseded] == [(old.id, new.id, "rule")]
    entry = AuditEntry.objects.get(action="knowledge.supersede")
    assert entry.target_id == old.id and entry.detail == {"superseded_by": new.id, "by": "rule"}
    event = MemoryEvent.objects.filter(kind=EventKind.PROMOTION).latest("id")
    assert event.detail["superseded"] == [{"id": old.id, "by": new.id, "rule": "rule"}]


def test_a_fact_that_became_true_earlier_does_not_replace_the_current_one(space):
    _promote(space, "We moved to Leeds.", at=T0 + timedelta(days=10))
    _promote(space, "I live in Porto.", at=T0, summary="an old chat, imported late")
    assert _fact(space, "Porto").superseded_by_id == _fact(space, "Leeds").id
    assert _fact(space, "Leeds").valid_to is None


def test_a_fact_awaiting_review_replaces_nothing(space):
    _promote(space, "I live in Porto.")
    builders.personal_data_policy(space.tenant, review_mode="review_all")
    _promote(space, "We moved to Leeds.", at=T0 + timedelta(days=2))
    assert _fact(space, "Leeds").review_state == ReviewState.PENDING
    assert _fact(space, "Porto").valid_to is None


def test_with_a_model_an_update_supersedes_the_named_fact_in_the_same_promotion_exactly_once(space, llm_mode):
    builders.knowledge(space.end_user, text="2026-01-05: The user's morning drink is a flat white.")
    builders.knowledge(space.end_user, text="2026-01-05: The user lives in Porto.")
    segment = builders.segment_with_pages(space, summary="tea", messages=["I switched to tea."], l_interaction=9)
    known_line = "K2. 2026-01-05: The user's morning drink is a flat white."
    answer = {
        "profile": "Drinks tea.",
        "user_facts": [{"fact": "2026-01-06: The user now drinks tea in the morning.", "replaces": "K2"}],
        "assistant_facts": [],
    }
    llm = ScriptedLLM([json.dumps(answer)])
    with use_llm(llm):
        report = segment_promote(segment_id=segment.id, now=NOW)
    assert known_line in llm.calls[0][-1]["content"]  # newest first: Porto is K1
    old, new = _fact(space, "flat white"), _fact(space, "drinks tea")
    assert old.superseded_by_id == new.id and old.valid_to is not None
    assert [(s.earlier_id, s.later_id, s.by) for s in report.superseded] == [(old.id, new.id, "model")]
    assert AuditEntry.objects.filter(action="knowledge.supersede").count() == 1
    assert _fact(space, "Porto").valid_to is None


def test_a_model_naming_a_fact_it_was_not_shown_adds_a_new_fact(space, llm_mode):
    other = builders.end_user(tenant=space.tenant.slug, external_id="bob")
    theirs = builders.knowledge(other, text="Bob lives in Porto.")
    segment = builders.segment_with_pages(space, summary="home", messages=["I moved."], l_interaction=9)
    update = {"fact": "Moved house.", "replaces": f"K{theirs.id}"}
    answer = {"profile": "", "user_facts": [update], "assistant_facts": []}
    with use_llm(ScriptedLLM([json.dumps(answer)])):
        segment_promote(segment_id=segment.id, now=NOW)
    theirs.refresh_from_db()
    assert theirs.valid_to is None and _fact(space, "Moved house").valid_to is None


def test_a_fact_approved_in_review_then_replaces_the_earlier_one(space):
    from memory.services.audit import Actor
    from memory.services.review import knowledge_review

    _promote(space, "I live in Porto.")
    builders.personal_data_policy(space.tenant, review_mode="review_all")
    _promote(space, "We moved to Leeds.", at=T0 + timedelta(days=2))
    knowledge_review(entry=_fact(space, "Leeds"), decision="approve", actor=Actor.system("test-reviewer"))
    assert _fact(space, "Porto").superseded_by_id == _fact(space, "Leeds").id
