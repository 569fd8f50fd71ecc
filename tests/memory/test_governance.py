"""Governing memory by hand: edits re-embed, pins and locks hold, forgetting removes content and what quotes it."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from memory.models import AuditEntry, KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.models.tiers import ProfileAuthor
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.governance import (
    GovernanceError,
    knowledge_forget,
    knowledge_update,
    memory_flag_set,
    memory_pause_set,
    page_forget,
    profile_edit,
    profile_version_forget,
    segment_forget,
    segment_update,
)
from memory.services.promotion import segment_promote
from memory.services.turns import EndUserClosed
from tests import builders
from tests.builders import T0

OPERATOR = Actor("operator", "1", "sam")
SECRET = "My locker code at the gym is 4417 and nobody knows it."


@pytest.fixture
def promoted(space):
    """A segment with a secret page, promoted offline so the secret is quoted in facts, profile and summaries."""
    segment = builders.segment(space, summary=SECRET, l_interaction=9, last_touched_at=T0)
    secret = builders.page(
        space,
        user_message=SECRET,
        assistant_reply="I will keep that safe.",
        at=T0,
        segment=segment,
        chain_summary=SECRET,
        topic_summary=SECRET,
    )
    builders.page(
        space,
        user_message="I also love green tea in the morning.",
        assistant_reply="Nice.",
        at=T0 + timedelta(minutes=1),
        segment=segment,
        topic_summary="Green tea in the morning.",
    )
    segment_promote(segment_id=segment.id, now=T0)
    assert KnowledgeEntry.objects.filter(text__contains="4417").exists()
    assert "4417" in ProfileVersion.objects.get().text
    return secret


def test_editing_knowledge_changes_text_and_embedding_and_audits_before_and_after(space):
    fact = builders.knowledge(space.end_user, embedded=False)
    knowledge_update(entry=fact, text="The user prefers green tea", actor=OPERATOR, reason="user corrected it")
    fact.refresh_from_db()
    assert fact.text == "The user prefers green tea" and fact.embedding is not None
    audit = AuditEntry.objects.get(action="knowledge.edit")
    assert (audit.before, audit.after, audit.reason) == (
        "The user likes tea",
        "The user prefers green tea",
        "user corrected it",
    )
    assert audit.subject_id == space.end_user_id


@pytest.mark.parametrize(
    ("text", "reason", "error"), [("", "why", "empty"), ("ok", "", "reason"), ("x" * 4001, "r", "longer")]
)
def test_a_bad_edit_is_refused_and_changes_nothing(space, text, reason, error):
    fact = builders.knowledge(space.end_user)
    with pytest.raises(GovernanceError, match=error):
        knowledge_update(entry=fact, text=text, actor=OPERATOR, reason=reason)
    fact.refresh_from_db()
    assert fact.text == "The user likes tea"
    assert not AuditEntry.objects.exists()


def test_editing_a_segment_summary_recomputes_its_embedding(space, embedder):
    segment = builders.segment(space, summary="old", last_touched_at=T0)
    segment_update(
        segment=segment, summary="Trips to Japan", keywords=["Japan", "travel"], actor=OPERATOR, reason="clearer"
    )
    segment.refresh_from_db()
    assert segment.summary == "Trips to Japan" and segment.keywords == ["japan", "travel"]
    assert np.allclose(segment.embedding, embedder.embed(["Trips to Japan"])[0])


def test_a_hand_written_profile_is_a_new_version_by_its_author(space):
    builders.profile(space.end_user, text="v1")
    version = profile_edit(
        end_user=space.end_user, text="Prefers email.", actor=Actor.end_user(space.end_user), reason="mine"
    )
    assert (version.number, version.author) == (2, ProfileAuthor.END_USER)
    assert ProfileVersion.objects.count() == 2


def test_pinning_is_audited_once_and_unpinning_too(space):
    fact = builders.knowledge(space.end_user)
    assert memory_flag_set(item=fact, flag="pinned", value=True, actor=OPERATOR, reason="important")
    assert not memory_flag_set(item=fact, flag="pinned", value=True, actor=OPERATOR, reason="again")
    assert memory_flag_set(item=fact, flag="pinned", value=False, actor=OPERATOR, reason="no longer")
    assert list(AuditEntry.objects.order_by("seq").values_list("action", flat=True)) == [
        "knowledge.pin",
        "knowledge.unpin",
    ]


def test_a_profile_version_cannot_be_pinned(space):
    version = builders.profile(space.end_user, text="v1")
    with pytest.raises(GovernanceError, match="cannot be pinned"):
        memory_flag_set(item=version, flag="pinned", value=True, actor=OPERATOR, reason="x")


def test_a_locked_entry_survives_the_fifo_cap(space, settings):
    from memory.services.promotion import knowledge_enforce_capacity

    settings.MEMORY_KNOWLEDGE_CAPACITY = 2
    oldest = builders.knowledge(space.end_user, text="oldest fact")
    memory_flag_set(item=oldest, flag="locked", value=True, actor=OPERATOR, reason="keep")
    builders.knowledge(space.end_user, text="newer fact")
    builders.knowledge(space.end_user, text="newest fact")
    knowledge_enforce_capacity(space=space)
    assert sorted(KnowledgeEntry.objects.values_list("text", flat=True)) == ["newest fact", "oldest fact"]


def test_forgetting_a_page_removes_it_and_every_text_that_quotes_it(space, promoted):
    report = page_forget(page=promoted, actor=OPERATOR, reason="user asked")
    assert not Page.objects.filter(pk=promoted.pk).exists()
    assert report.knowledge >= 1 and report.topics_rederived == 1 and report.profile_rederived >= 1
    for model, fields in (
        (KnowledgeEntry, ["text"]),
        (ProfileVersion, ["text"]),
        (Page, ["user_message", "assistant_reply", "chain_summary", "topic_summary"]),
        (Segment, ["summary"]),
    ):
        for field in fields:
            assert not model.objects.filter(**{f"{field}__contains": "4417"}).exists(), (model, field)
    assert Segment.objects.get().summary == "Green tea in the morning."


def test_forgetting_a_page_redacts_later_turns_that_quoted_it(space, promoted):
    later = builders.page(space, user_message="What did I tell you?", assistant_reply=f"You said: {SECRET}", at=T0)
    page_forget(page=promoted, actor=OPERATOR, reason="user asked")
    later.refresh_from_db()
    assert "4417" not in later.assistant_reply and "[forgotten]" in later.assistant_reply


def test_the_forget_audit_keeps_who_why_and_what_kind_not_the_content(space, promoted):
    knowledge_update(
        entry=KnowledgeEntry.objects.filter(text__contains="4417").first(), text=SECRET, actor=OPERATOR, reason="r"
    )
    page_forget(page=promoted, actor=OPERATOR, reason="user asked")
    forget = AuditEntry.objects.get(action="page.forget")
    assert (forget.actor_label, forget.reason, forget.target_type) == ("sam", "user asked", "page")
    edit = AuditEntry.objects.get(action="knowledge.edit")
    assert edit.erased and edit.after is None  # the earlier edit quoted the secret: only its tombstone is left
    assert "4417" not in str(list(AuditEntry.objects.filter(action="page.forget").values()))
    assert audit_verify(tenant=space.tenant).ok


def test_forgetting_a_segment_removes_its_pages_and_heat_history(space, promoted):
    segment = promoted.segment
    report = segment_forget(segment=segment, actor=OPERATOR, reason="user asked")
    assert (report.segments, report.pages) == (1, 2)
    assert not Segment.objects.exists() and not Page.objects.exists()
    assert not KnowledgeEntry.objects.filter(text__contains="4417").exists()


def test_forgetting_knowledge_and_profile_versions(space):
    fact = builders.knowledge(space.end_user)
    knowledge_forget(entry=fact, actor=OPERATOR, reason="wrong")
    first = builders.profile(space.end_user, text="v1")
    second = builders.profile(space.end_user, text="v2")
    profile_version_forget(version=second, actor=OPERATOR, reason="wrong")
    assert not KnowledgeEntry.objects.exists()
    assert list(ProfileVersion.objects.all()) == [first]


def test_pausing_memory_is_audited_and_idempotent(space):
    end_user_actor = Actor.end_user(space.end_user)
    assert memory_pause_set(space=space, paused=True, actor=end_user_actor, reason="holiday")
    assert not memory_pause_set(space=space, paused=True, actor=end_user_actor, reason="holiday")
    assert MemorySpace.objects.get(pk=space.pk).paused
    assert AuditEntry.objects.get().action == "memory.pause"


def test_a_change_landing_after_the_users_erasure_is_refused_not_half_stored(space):
    fact = builders.knowledge(space.end_user)
    page = builders.page(space, user_message="I keep bees on my balcony.")
    user_erase(end_user=space.end_user, actor=OPERATOR, legal_basis="GDPR Art. 17", dry_run=False)

    with pytest.raises(EndUserClosed):
        knowledge_update(entry=fact, text="The user keeps wasps", actor=OPERATOR, reason="late correction")
    with pytest.raises(EndUserClosed):
        page_forget(page=page, actor=OPERATOR, reason="late forget")
    assert not KnowledgeEntry.objects.exists() and not Page.objects.exists()


def test_a_deactivated_users_memory_can_still_be_governed(space):
    fact = builders.knowledge(space.end_user)
    type(space.end_user).objects.filter(pk=space.end_user_id).update(is_active=False)

    assert knowledge_update(entry=fact, pinned=True, actor=OPERATOR, reason="keep it")
