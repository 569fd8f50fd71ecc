"""Finding 1: a legal hold keeps the end user's memory through every deleting path, the automatic ones included
(STM overflow while paused, mid-term capacity, knowledge capacity), and every automatic deletion is audited."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

import pytest

from memory.models import AuditEntry, KnowledgeEntry, MemoryEvent, Page, Segment
from memory.models.events import EventKind
from memory.models.tiers import Tier
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor
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


# Every function of memory/services that deletes rows, and how a legal hold stops it: by calling the check itself,
# through the callers that check (each named), or because what it deletes is not the end user's memory. A new
# deleting function fails the test below until it is added here, with the check it goes through.
HOLD_CHECKED = {
    ("turns", "_stm_paused_drop"): "itself",
    ("promotion", "knowledge_enforce_capacity"): "itself",
    ("updating", "segment_evict"): ("updating", "segments_evict_past_capacity"),
    ("gdpr", "_erase_locked"): "itself",
    ("retention", "chat_replies_expire"): "itself",
    ("forgetting", "plan_apply"): ("governance", "_forget_lock"),  # every forget service; pages_forget checks itself
}
NOT_A_HOLDS_BUSINESS = {
    ("audit", "audit_prune"): "audit entries: the prune keeps every entry about a user under hold (it reads holds)",
    ("bundle_import", "bundle_stage"): "a staged copy of a bundle, not memory yet",
    ("bundle_import", "memory_import_staged"): "the staged copy, once imported",
    ("import_jobs", "memory_import_staged_queue"): "the staged copy of a bundle already imported",
    ("embedding_state", "embedding_state_set"): "the installation's embedding model row",
    ("idempotency", "idempotent_request_release"): "a pending request record",
    ("jobs", "_placements_requeue"): "job leases",
    ("jobs", "job_done"): "job leases",
    ("jobs", "job_forget"): "job leases",
    ("retention", "retention_policy_delete"): "a tenant's policy",
    ("team", "membership_remove"): "an operator's membership of a tenant, not anyone's memory",
    ("webhook_endpoints", "webhook_endpoint_delete"): "a tenant's webhook endpoint and its delivery log",
    ("webhook_delivery", "webhook_log_expire"): "notifications already sent to the tenant's systems, not memory",
    ("passages", "page_passages_set"): "a page's passage vectors, written again with its new text (the page stays)",
    ("personal_data", "_knowledge_merged"): "a fact folded into its identical twin, whose sources it keeps",
}
SERVICES = Path(__file__).resolve().parents[2] / "memory" / "services"


def deleting_functions() -> dict[tuple[str, str], str]:
    """Each function of memory/services that calls `.delete()`, with its source."""
    found = {}
    for path in sorted(SERVICES.glob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "delete"
                for call in ast.walk(node)
            ):
                found[(path.stem, node.name)] = ast.get_source_segment(source, node)
    return found


def function_source(module: str, name: str) -> str:
    source = (SERVICES / f"{module}.py").read_text()
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(source, node)


def test_every_service_that_deletes_memory_goes_through_the_one_hold_check():
    deleting = deleting_functions()
    assert set(deleting) == set(HOLD_CHECKED) | set(NOT_A_HOLDS_BUSINESS)
    for function, checked_by in HOLD_CHECKED.items():
        checker = function_source(*checked_by) if isinstance(checked_by, tuple) else deleting[function]
        assert "legal_hold_for_deletion(" in checker or "legal_hold_check(" in checker, (function, checked_by)
    assert "legal_hold_for_deletion(" in function_source("legal_hold", "legal_hold_check")
