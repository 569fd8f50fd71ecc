"""Marking a fact or a turn outdated by hand keeps it as history with its replacing value, audited both ways."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, Page
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor
from memory.services.governance import GovernanceError
from memory.services.legal_hold import legal_hold_place
from memory.services.validity import (
    MAX_NOTE,
    knowledge_mark_current,
    knowledge_mark_outdated,
    page_mark_current,
    page_mark_outdated,
)
from tests import builders
from tests.builders import T0

SUPERVISOR = Actor("operator", "1", "sam")


@pytest.fixture
def fact(space):
    return builders.knowledge(space.end_user, text="The user drinks coffee")


@pytest.fixture
def turn_page(space):
    return builders.page(space, user_message="I live in Leeds.")


def test_a_fact_marked_outdated_stays_as_history_with_its_replacing_value(fact):
    changed = knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="customer says", replacement=" tea ", now=T0)

    stored = KnowledgeEntry.objects.get(pk=fact.pk)
    assert changed and (stored.valid_to, stored.outdated_note, stored.text) == (T0, "tea", "The user drinks coffee")


def test_marking_outdated_and_current_are_audited_with_the_reason(fact):
    knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="moved on", replacement="tea", now=T0)
    knowledge_mark_current(entry=fact, actor=SUPERVISOR, reason="mistake")

    entries = list(AuditEntry.objects.filter(target_type="knowledge", target_id=fact.pk).order_by("id"))
    assert [(e.action, e.reason) for e in entries] == [
        ("knowledge.outdated", "moved on"),
        ("knowledge.current", "mistake"),
    ]
    assert (entries[0].after, entries[1].before) == ("tea", "tea")
    assert audit_verify(tenant=fact.end_user.tenant).ok


def test_marking_current_clears_the_date_the_note_and_the_fact_that_replaced_it(fact):
    newer = builders.knowledge(fact.end_user, text="The user drinks tea")
    KnowledgeEntry.objects.filter(pk=fact.pk).update(valid_to=T0, superseded_by=newer, outdated_note="tea")
    fact.refresh_from_db()

    assert knowledge_mark_current(entry=fact, actor=SUPERVISOR, reason="still true")

    stored = KnowledgeEntry.objects.get(pk=fact.pk)
    assert (stored.valid_to, stored.outdated_note, stored.superseded_by_id) == (None, "", None)


def test_marking_an_outdated_fact_again_changes_nothing_and_is_not_audited(fact):
    knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="once", now=T0)

    again = knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="twice", replacement="other")

    assert not again and KnowledgeEntry.objects.get(pk=fact.pk).valid_to == T0
    assert AuditEntry.objects.filter(action="knowledge.outdated").count() == 1
    assert not knowledge_mark_current(entry=builders.knowledge(fact.end_user, text="x"), actor=SUPERVISOR, reason="r")


def test_a_turn_marked_outdated_stays_in_the_transcript_and_is_audited_both_ways(turn_page):
    assert page_mark_outdated(page=turn_page, actor=SUPERVISOR, reason="moved", replacement="York", now=T0)
    stored = Page.objects.get(pk=turn_page.pk)
    assert (stored.valid_to, stored.outdated_note, stored.user_message) == (T0, "York", "I live in Leeds.")

    assert page_mark_current(page=turn_page, actor=SUPERVISOR, reason="undo")
    assert Page.objects.get(pk=turn_page.pk).valid_to is None
    actions = AuditEntry.objects.filter(target_type="page").order_by("id").values_list("action", flat=True)
    assert list(actions) == ["page.outdated", "page.current"]


def test_a_reason_is_required_and_a_long_replacement_is_refused(fact):
    with pytest.raises(GovernanceError):
        knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="  ")
    with pytest.raises(GovernanceError):
        knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="r", replacement="x" * (MAX_NOTE + 1))
    assert KnowledgeEntry.objects.get(pk=fact.pk).valid_to is None


def test_the_replacing_value_goes_through_the_tenants_do_not_store_policy(fact):
    builders.personal_data_policy(fact.end_user.tenant, email="do_not_store")

    knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="r", replacement="now at ann@example.com")

    assert "ann@example.com" not in KnowledgeEntry.objects.get(pk=fact.pk).outdated_note


def test_marking_outdated_is_allowed_under_a_legal_hold_and_on_a_locked_fact(fact):
    """Outdated is not deletion (a hold keeps everything, and this keeps it), and locked only keeps automatic
    updating away, as for edits by hand."""
    builders.flags_set(fact, locked=True)
    legal_hold_place(end_user=fact.end_user, actor=SUPERVISOR, reason="case")

    assert knowledge_mark_outdated(entry=fact, actor=SUPERVISOR, reason="r", now=T0)
