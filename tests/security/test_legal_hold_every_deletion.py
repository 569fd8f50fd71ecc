"""Finding 1: a legal hold keeps the end user's memory through every deleting path, the automatic ones included
(STM overflow while paused, mid-term capacity, knowledge capacity), and every automatic deletion is audited."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.models import AuditEntry, KnowledgeEntry, MemoryEvent, Page, Segment
from memory.models.events import EventKind
from memory.models.tiers import Tier
from memory.services.audit import Actor, audit_verify
from memory.services.legal_hold import legal_hold_place, legal_hold_release
from memory.services.promotion import knowledge_enforce_capacity
from memory.services.updating import segments_evict_past_capacity
from tests import builders
from tests.builders import T0

DPO = Actor("operator", "9", "dana")


@pytest.fixture
def space(alice):
    return builders.space_of(alice)


def hold(end_user) -> None:
    legal_hold_place(end_user=end_user, actor=DPO, reason="litigation 2026-114")


def cold_segments(space, count: int) -> list[Segment]:
    segments = [builders.segment(space, summary=f"topic {i}", last_touched_at=T0) for i in range(count)]
    for segment in segments:
        builders.page(space, user_message=f"said in {segment.summary}", assistant_reply="ok", at=T0, segment=segment)
    return segments


def test_a_paused_user_under_hold_keeps_the_pages_that_leave_short_term_memory(space, alice):
    builders.turns(space, messages=[f"before the hold {i}" for i in range(7)])
    hold(alice)
    builders.pause(space)
    builders.turns(space, messages=[f"while paused {i}" for i in range(8)], start=T0 + timedelta(hours=1))
    kept = set(Page.objects.filter(space=space).values_list("user_message", flat=True))
    assert {f"before the hold {i}" for i in range(7)} <= kept
    assert Page.objects.filter(space=space, tier=Tier.SHORT_TERM).count() == 15
    assert not AuditEntry.objects.filter(action="page.paused_drop").exists()
    assert MemoryEvent.objects.filter(kind=EventKind.HOLD_KEPT).exists()


def test_pages_kept_by_a_hold_are_dropped_and_audited_at_the_first_overflow_after_release(space, alice):
    hold(alice)
    builders.pause(space)
    builders.turns(space, messages=[f"while paused {i}" for i in range(9)])
    legal_hold_release(end_user=alice, actor=DPO, reason="case closed")
    builders.turns(space, messages=["after the release"], start=T0 + timedelta(hours=1))
    assert Page.objects.filter(space=space).count() == 7
    entry = AuditEntry.objects.get(action="page.paused_drop")
    assert entry.actor_kind == "system" and entry.subject_id == alice.pk
    assert len(entry.detail["removed_page_ids"]) == 3
    assert audit_verify(tenant=alice.tenant).ok


def test_every_page_dropped_while_paused_is_audited(space, alice):
    builders.pause(space)
    builders.turns(space, messages=[f"message {i}" for i in range(9)])
    drops = AuditEntry.objects.filter(action="page.paused_drop", subject_id=alice.pk)
    assert sum(len(entry.detail["removed_page_ids"]) for entry in drops) == 2


def test_mid_term_capacity_evicts_nothing_while_the_user_is_under_hold(space, alice, settings):
    settings.MEMORY_MTM_CAPACITY = 1
    segments = cold_segments(space, 3)
    hold(alice)
    assert segments_evict_past_capacity(space=space, now=T0 + timedelta(days=30)) == []
    assert Segment.objects.filter(space=space).count() == 3
    assert Page.objects.filter(segment__in=segments).count() == 3
    assert MemoryEvent.objects.filter(kind=EventKind.HOLD_KEPT).exists()


def test_a_mid_term_eviction_is_audited_with_the_pages_it_removed(space, alice, settings):
    settings.MEMORY_MTM_CAPACITY = 1
    cold_segments(space, 2)
    evicted = segments_evict_past_capacity(space=space, now=T0 + timedelta(days=30))
    entry = AuditEntry.objects.get(action="segment.evict")
    assert entry.target_id == evicted[0] and entry.subject_id == alice.pk
    assert entry.detail["removed_pages"] == 1
    assert audit_verify(tenant=alice.tenant).ok


def test_the_knowledge_store_drops_nothing_past_capacity_while_the_user_is_under_hold(space, alice, settings):
    settings.MEMORY_KNOWLEDGE_CAPACITY = 2
    for i in range(4):
        builders.knowledge(alice, text=f"fact {i}")
    hold(alice)
    assert knowledge_enforce_capacity(space=space) == []
    assert KnowledgeEntry.objects.filter(end_user=alice).count() == 4
    assert not AuditEntry.objects.filter(action="knowledge.drop").exists()


def test_a_knowledge_drop_is_audited_with_the_facts_it_dropped(space, alice, settings):
    settings.MEMORY_KNOWLEDGE_CAPACITY = 2
    facts = [builders.knowledge(alice, text=f"fact {i}") for i in range(3)]
    assert knowledge_enforce_capacity(space=space) == [facts[0].pk]
    entry = AuditEntry.objects.get(action="knowledge.drop")
    assert entry.detail["dropped_knowledge_ids"] == [facts[0].pk] and entry.subject_id == alice.pk
