"""Rejecting a fact withholds the turns it was learnt from (a pinned turn is kept on purpose); an operator may use a
withheld turn again, audited; the reviewer may instead forget the turns with the rejection, unless a legal hold
keeps them."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, Page, ReviewState
from memory.services.audit import Actor
from memory.services.legal_hold import LegalHoldActive, legal_hold_place
from memory.services.review import (
    knowledge_reject_and_forget,
    knowledge_reject_preview,
    knowledge_review,
    page_withhold_release,
)
from tests import builders

REVIEWER = Actor.system("test-reviewer")


@pytest.fixture
def learnt(space):
    """A pending fact learnt from two placed turns, the second of them pinned."""
    segment = builders.segment(space, summary="health")
    said = builders.page(space, user_message="My therapist helps with my anxiety.", segment=segment)
    pinned = builders.page(space, user_message="I see my therapist on Mondays.", segment=segment)
    builders.flags_set(pinned, pinned=True)
    entry = builders.knowledge(space.end_user, text="The user sees a therapist.", source_pages=[said, pinned])
    KnowledgeEntry.objects.filter(pk=entry.pk).update(review_state=ReviewState.PENDING)
    entry.refresh_from_db()
    return entry, said, pinned


def test_rejecting_withholds_the_unpinned_source_turns_and_keeps_the_pinned_one(learnt):
    entry, said, pinned = learnt

    rejected = knowledge_review(entry=entry, decision="reject", actor=REVIEWER, reason="health data")

    assert Page.objects.get(pk=said.pk).withheld and not Page.objects.get(pk=pinned.pk).withheld
    assert [p.pk for p in rejected.rejection.turns_withheld] == [said.pk]
    assert [p.pk for p in rejected.rejection.turns_kept_pinned] == [pinned.pk]
    assert AuditEntry.objects.get(action="page.withhold").target_id == said.pk


def test_a_withheld_turn_is_used_again_by_an_operator_once_and_audited(learnt):
    entry, said, _ = learnt
    knowledge_review(entry=entry, decision="reject", actor=REVIEWER, reason="health data")
    page = Page.objects.get(pk=said.pk)

    assert page_withhold_release(page=page, actor=REVIEWER, reason="the user asked")
    assert not page_withhold_release(page=page, actor=REVIEWER, reason="the user asked")

    assert not Page.objects.get(pk=said.pk).withheld
    assert AuditEntry.objects.filter(action="page.use_again").count() == 1


def test_the_preview_names_the_turns_and_what_forgetting_them_would_do(learnt):
    entry, said, pinned = learnt

    preview = knowledge_reject_preview(entry=entry)

    assert [p.pk for p in preview.turns_withheld] == [said.pk]
    assert [p.pk for p in preview.turns_kept_pinned] == [pinned.pk]
    assert preview.forget.pages == 2 and not preview.legal_hold
    assert KnowledgeEntry.objects.get(pk=entry.pk).review_state == ReviewState.PENDING  # nothing changed


def test_reject_and_forget_deletes_the_source_turns_in_one_step(learnt):
    entry, said, pinned = learnt

    _, impact = knowledge_reject_and_forget(entry=entry, actor=REVIEWER, reason="health data")

    assert impact.pages == 2
    assert not Page.objects.filter(pk__in=[said.pk, pinned.pk]).exists()
    assert AuditEntry.objects.filter(action="knowledge.reject").exists()
    assert AuditEntry.objects.filter(action="knowledge.reject_forget").exists()


def test_a_legal_hold_refuses_the_forget_and_changes_nothing(learnt):
    entry, said, _ = learnt
    legal_hold_place(end_user=entry.end_user, actor=REVIEWER, reason="litigation")

    assert knowledge_reject_preview(entry=entry).legal_hold
    with pytest.raises(LegalHoldActive):
        knowledge_reject_and_forget(entry=entry, actor=REVIEWER, reason="health data")

    assert KnowledgeEntry.objects.get(pk=entry.pk).review_state == ReviewState.PENDING
    assert Page.objects.filter(pk=said.pk, withheld=False).exists()
