"""Legal hold: a user under hold keeps everything through forget and erasure at the service level; placing and
releasing need a reason and are audited; after release, forgetting and erasure work again."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, EndUser, KnowledgeEntry, LegalHold, Page, ProfileVersion, Segment
from memory.selectors.governance import audit_verify
from memory.selectors.retention import legal_hold_active
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.governance import (
    knowledge_forget,
    memory_flag_set,
    page_forget,
    pages_forget,
    profile_version_forget,
    segment_forget,
)
from memory.services.legal_hold import LegalHoldActive, LegalHoldError, legal_hold_place, legal_hold_release
from tests import builders

DPO = Actor("operator", "9", "dana")


@pytest.fixture
def held(alice):
    """Alice's memory of every kind, and a hold on her."""
    space = builders.space_of(alice)
    topic = builders.segment_with_pages(space, summary="beans", messages=["I grow beans.", "Beans need sun."])
    fact = builders.knowledge(alice, text="The user grows beans")
    version = builders.profile(alice, text="Grows beans.")
    legal_hold_place(end_user=alice, actor=DPO, reason="litigation 2026-114")
    return {"topic": topic, "page": topic.pages.first(), "fact": fact, "version": version}


def test_every_forget_service_refuses_and_changes_nothing(held, alice):
    attempts = [
        lambda: page_forget(page=held["page"], actor=DPO, reason="asked"),
        lambda: segment_forget(segment=held["topic"], actor=DPO, reason="asked"),
        lambda: knowledge_forget(entry=held["fact"], actor=DPO, reason="asked"),
        lambda: profile_version_forget(version=held["version"], actor=DPO, reason="asked"),
        lambda: pages_forget(end_user=alice, page_ids=[held["page"].pk], actor=DPO, reason="r", action="x.y"),
    ]
    for attempt in attempts:
        with pytest.raises(LegalHoldActive, match="Forgetting is suspended: this user is under a legal hold"):
            attempt()
    assert Page.objects.filter(space__end_user=alice).count() == 2
    assert Segment.objects.filter(pk=held["topic"].pk).exists()
    assert KnowledgeEntry.objects.filter(pk=held["fact"].pk).exists()
    assert ProfileVersion.objects.filter(pk=held["version"].pk).exists()
    assert not AuditEntry.objects.filter(action__endswith=".forget").exists()


def test_erasure_refuses_before_anything_changes_and_names_who_placed_the_hold(held, alice):
    with pytest.raises(LegalHoldActive, match=r"Erasure is suspended.*placed by dana"):
        user_erase(end_user=alice, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    alice.refresh_from_db()
    assert alice.is_active  # not even deactivated
    assert Page.objects.filter(space__end_user=alice).count() == 2
    assert user_erase(end_user=alice, actor=DPO, legal_basis="", dry_run=True).counts["memory_page"] == 2


def test_placing_and_releasing_are_audited_with_their_reasons(held, alice, tenant):
    hold = legal_hold_release(end_user=alice, actor=DPO, reason="case settled")
    assert hold.released_at and hold.release_reason == "case settled" and hold.released_by_label == "dana"
    actions = list(AuditEntry.objects.filter(subject_id=alice.pk).order_by("seq").values_list("action", "reason"))
    assert actions[-2:] == [("legal_hold.place", "litigation 2026-114"), ("legal_hold.release", "case settled")]
    assert audit_verify(tenant=tenant).ok


def test_after_release_forgetting_and_erasure_work_again(held, alice):
    legal_hold_release(end_user=alice, actor=DPO, reason="case settled")
    knowledge_forget(entry=held["fact"], actor=DPO, reason="asked")
    erasure = user_erase(end_user=alice, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    assert erasure.receipt.counts["memory_legalhold"] == 1
    assert not EndUser.objects.filter(pk=alice.pk).exists() and not LegalHold.objects.exists()


def test_a_hold_needs_a_reason_and_only_one_is_active(alice):
    with pytest.raises(LegalHoldError, match="a reason is required"):
        legal_hold_place(end_user=alice, actor=DPO, reason="  ")
    legal_hold_place(end_user=alice, actor=DPO, reason="case A")
    with pytest.raises(LegalHoldError, match="already under a legal hold"):
        legal_hold_place(end_user=alice, actor=DPO, reason="case B")
    assert legal_hold_active(end_user=alice).reason == "case A"


def test_releasing_without_a_hold_says_so(alice):
    with pytest.raises(LegalHoldError, match="not under a legal hold"):
        legal_hold_release(end_user=alice, actor=DPO, reason="nothing to release")


def test_editing_and_pinning_stay_possible_under_hold(held):
    assert memory_flag_set(item=held["fact"], flag="pinned", value=True, actor=DPO, reason="keep it in view")
