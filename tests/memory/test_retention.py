"""Retention: a run removes exactly what its dry run planned, through the forgetting and erasure services, spares
users under legal hold, erases inactive users with a receipt, and keeps the pruned audit chain verifiable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.models import (
    AuditEntry,
    ChatReply,
    EndUser,
    KnowledgeEntry,
    Page,
    ProfileVersion,
    RetentionRun,
    Segment,
)
from memory.selectors.governance import audit_verify
from memory.selectors.retention import months_before, retention_plan
from memory.services.audit import Actor
from memory.services.gdpr import receipt_verify
from memory.services.governance import memory_flag_set
from memory.services.legal_hold import legal_hold_place, legal_hold_release
from memory.services.retention import (
    RetentionPolicyError,
    retention_apply,
    retention_policy_set,
    retention_run,
    retention_run_daily,
)
from tests import builders
from tests.memory.test_audit import tamper

DPO = Actor("operator", "9", "dana")
NOW = timezone.now() + timedelta(days=800)  # everything built at the real clock is old by then
RECENT = NOW - timedelta(days=1)
POLICY = {
    "pages": 180,
    "knowledge": 365,
    "profile_versions": 365,
    "chat_replies": 90,
    "audit_entries": 365,
    "inactive_users": 6,
}


def _memory(end_user: EndUser, *, tag: str) -> dict:
    """Old and recent memory of every tier for one user: a segment of two old pages with a fact learnt from them,
    an old and a recent page, fact, profile version and reply."""
    space = builders.space_of(end_user)
    old_topic = builders.segment_with_pages(space, summary=f"{tag} gardening", messages=[f"I grow {tag} beans."] * 2)
    old_pages = list(old_topic.pages.order_by("seq"))
    learnt = builders.knowledge(end_user, text=f"The user grows {tag} beans", source_pages=old_pages)
    recent_page = builders.page(space, user_message=f"I like {tag} tea.")
    builders.backdate(recent_page, at=RECENT)  # recent at NOW, in the future: no turn may be recorded that far ahead
    old_fact = builders.knowledge(end_user, text=f"The user has a {tag} cat")
    recent_fact = builders.knowledge(end_user, text=f"The user likes {tag} tea")
    builders.backdate(recent_fact, created_at=RECENT)
    old_version = builders.profile(end_user, text=f"Grows {tag} beans.")
    recent_version = builders.profile(end_user, text=f"Likes {tag} tea.")
    builders.backdate(recent_version, created_at=RECENT)
    old_reply = builders.reply(space, idempotency_key=f"{tag}-old")
    recent_reply = builders.reply(space, idempotency_key=f"{tag}-new")
    builders.backdate(recent_reply, created_at=RECENT)
    builders.backdate(end_user, last_active_at=RECENT)
    return locals()


@pytest.fixture
def acme(db, tenant):
    """Alice with old and recent memory, Bob (under legal hold) too, Carol inactive for a year; Acme's policy."""
    alice = builders.end_user(external_id="alice")
    bob = builders.end_user(external_id="bob")
    carol = builders.end_user(external_id="carol")
    memory = {"alice_memory": _memory(alice, tag="alice"), "bob_memory": _memory(bob, tag="bob")}
    builders.backdate(carol, last_active_at=NOW - timedelta(days=365))
    retention_policy_set(tenant=tenant, limits=POLICY, actor=DPO)
    legal_hold_place(end_user=bob, actor=DPO, reason="litigation 2026-114")
    return {"tenant": tenant, "alice": alice, "bob": bob, "carol": carol, **memory}


def _exists(model, ids) -> set[int]:
    return set(model.objects.filter(pk__in=ids).values_list("pk", flat=True))


def test_a_run_removes_exactly_what_its_dry_run_planned_and_writes_receipts(acme):
    tenant, alice = acme["tenant"], acme["alice"]
    plan = retention_plan(tenant=tenant, now=NOW)
    planned = plan.ids()
    mine = acme["alice_memory"]
    assert set(planned["pages"]) == {p.pk for p in mine["old_pages"]}
    assert set(planned["knowledge"]) == {mine["learnt"].pk, mine["old_fact"].pk}
    assert planned["profile_versions"] == [mine["old_version"].pk]
    assert planned["chat_replies"] == [mine["old_reply"].pk]
    assert planned["inactive_users"] == [acme["carol"].pk]
    assert plan.audit_entries > 0 and plan.held_users == 1

    run = retention_run(tenant=tenant, trigger="command", now=NOW)

    assert run.status == "done" and run.removed == plan.counts() and run.planned == plan.counts()
    models = {"pages": Page, "knowledge": KnowledgeEntry, "profile_versions": ProfileVersion}
    models |= {"chat_replies": ChatReply, "inactive_users": EndUser}
    for tier, model in models.items():
        assert not _exists(model, planned[tier]), tier
    assert not AuditEntry.objects.filter(tenant=tenant, seq__in=planned["audit_entries"]).exists()
    kept = [mine["recent_page"], mine["recent_fact"], mine["recent_version"], mine["recent_reply"]]
    assert all(type(item).objects.filter(pk=item.pk).exists() for item in kept)
    assert not Segment.objects.filter(pk=mine["old_topic"].pk).exists()  # its pages went, so did it
    [receipt] = run.receipts.all()
    assert receipt_verify(receipt) and receipt.counts["memory_enduser"] == 1
    assert receipt.actor_label == "retention" and "6 months" in receipt.legal_basis
    assert EndUser.objects.filter(pk=alice.pk).exists()


def test_a_user_under_legal_hold_keeps_every_tier_and_their_audit_entries(acme):
    bob = acme["bob"]
    before = {model: model.objects.filter(**lookup).count() for model, lookup in _owned(bob).items()}
    retention_run(tenant=acme["tenant"], trigger="command", now=NOW)
    after = {model: model.objects.filter(**lookup).count() for model, lookup in _owned(bob).items()}
    assert after == before and all(before.values())
    assert AuditEntry.objects.filter(tenant=acme["tenant"], action="legal_hold.place", subject_id=bob.pk).exists()


def _owned(end_user: EndUser) -> dict:
    return {
        Page: {"space__end_user": end_user},
        KnowledgeEntry: {"end_user": end_user},
        ProfileVersion: {"end_user": end_user},
        ChatReply: {"space__end_user": end_user},
    }


def test_the_pruned_audit_chain_still_verifies_from_its_anchor(acme):
    tenant = acme["tenant"]
    plan = retention_plan(tenant=tenant, now=NOW)
    retention_run(tenant=tenant, trigger="command", now=NOW)
    report = audit_verify(tenant=tenant)
    assert report.ok and report.anchored_after == plan.audit_through_seq
    prune = AuditEntry.objects.get(tenant=tenant, action="audit.prune")
    assert prune.detail["anchor_seq"] == plan.audit_through_seq
    out = StringIO()
    call_command("audit_verify", "--tenant", "acme", stdout=out)
    assert (
        f"acme: OK, {report.checked} entries after #{plan.audit_through_seq} (removed by retention)" in out.getvalue()
    )


def test_tampering_after_the_anchor_is_still_found(acme):
    tenant = acme["tenant"]
    retention_run(tenant=tenant, trigger="command", now=NOW)
    first = AuditEntry.objects.filter(tenant=tenant).order_by("seq").first()
    tamper("UPDATE memory_auditentry SET prev_hash = %s WHERE id = %s", ["f" * 64, first.pk])
    report = audit_verify(tenant=tenant)
    assert not report.ok and report.first_broken_seq == first.seq


def test_a_second_run_finds_nothing_more_to_remove(acme):
    retention_run(tenant=acme["tenant"], trigger="command", now=NOW)
    again = retention_run(tenant=acme["tenant"], trigger="command", now=NOW)
    # the audit too: what is left starts at the hold on Bob, which keeps every later entry
    assert sum(again.removed.values()) == 0 and again.skipped == {} and again.receipts.count() == 0


def test_forgetting_the_pages_also_forgets_what_was_learnt_from_them(acme):
    run = retention_run(tenant=acme["tenant"], trigger="command", now=NOW)
    assert run.derived == {"segments": 1, "knowledge": 1}  # Alice's topic, and the fact learnt from its pages


def test_batches_are_bounded_and_say_there_is_more(acme):
    plan = retention_plan(tenant=acme["tenant"], now=NOW, limit=1)
    assert plan.more and all(count <= 1 for count in plan.counts().values())
    run = retention_run(tenant=acme["tenant"], trigger="command", now=NOW, limit=1)
    assert run.more and run.removed == plan.counts()


def test_an_assistant_override_applies_to_its_own_pages_only(acme, tenant, assistant):
    retention_policy_set(tenant=tenant, assistant=assistant, limits={"pages": 2000}, actor=DPO)
    plan = retention_plan(tenant=tenant, now=NOW)
    assert plan.counts()["pages"] == 0 and plan.counts()["knowledge"] == 2


def test_an_assistant_policy_cannot_limit_the_audit_or_inactivity(tenant, assistant):
    with pytest.raises(RetentionPolicyError, match="audit_entries"):
        retention_policy_set(tenant=tenant, assistant=assistant, limits={"audit_entries": 30}, actor=DPO)
    with pytest.raises(RetentionPolicyError, match="at least 1"):
        retention_policy_set(tenant=tenant, limits={"pages": 0}, actor=DPO)


def test_no_policy_plans_nothing(tenant, alice):
    plan = retention_plan(tenant=tenant, now=NOW)
    assert plan.total == 0 and not plan.has_policy


def test_beats_daily_run_does_a_finished_day_once(acme):
    day = NOW.date()
    first = retention_run_daily(tenant_id=acme["tenant"].pk, day=day)
    assert first is not None and not first.more
    assert retention_run_daily(tenant_id=acme["tenant"].pk, day=day) is None
    assert RetentionRun.objects.filter(tenant=acme["tenant"], day=day).count() == 1


def test_a_run_already_in_progress_is_not_started_twice(acme):
    RetentionRun.objects.create(tenant=acme["tenant"], trigger="beat", started_at=timezone.now())
    assert retention_run(tenant=acme["tenant"], trigger="command") is None


def test_months_are_calendar_months():
    assert months_before(datetime(2026, 3, 31, 12, tzinfo=UTC), 1) == datetime(2026, 2, 28, 12, tzinfo=UTC)
    assert months_before(datetime(2026, 1, 15, tzinfo=UTC), 13) == datetime(2024, 12, 15, tzinfo=UTC)


@pytest.mark.parametrize(("extra_facts", "queries"), [(3, 255), (9, 357)])
def test_a_runs_batch_costs_a_fixed_number_of_queries_per_item(
    acme, extra_facts, queries, django_assert_max_num_queries
):
    # Each fact is forgotten through its own service, as by hand: lock, hold check, plan (profile lines), tombstones,
    # the audit entry (and the policy its reason is masked with) and the deletes, 17 queries; the rest (planning,
    # Carol's erasure with her webhook events, Alice's pages, replies, the audit prune, the run's record, the
    # profile's re-derivation job and its lease) is fixed for this memory.
    for i in range(extra_facts):
        builders.knowledge(acme["alice"], text=f"The user has hobby {i}")
    with django_assert_max_num_queries(queries):
        retention_run(tenant=acme["tenant"], trigger="command", now=NOW)


def test_a_hold_placed_after_planning_is_honoured_and_counted_as_kept(acme):
    legal_hold_release(end_user=acme["bob"], actor=DPO, reason="settled")  # so the whole audit log is due
    memory_flag_set(item=acme["alice_memory"]["recent_fact"], flag="pinned", value=True, actor=DPO, reason="r")
    pinned = AuditEntry.objects.get(action="knowledge.pin")
    retention_policy_set(tenant=acme["tenant"], limits=POLICY, actor=DPO)  # the newest entry, always kept
    plan = retention_plan(tenant=acme["tenant"], now=NOW)
    assert pinned.seq in plan.ids()["audit_entries"]
    legal_hold_place(end_user=acme["alice"], actor=DPO, reason="new claim")
    legal_hold_place(end_user=acme["carol"], actor=DPO, reason="new claim")
    removed, outcome = retention_apply(plan=plan)
    assert outcome.skipped == {
        "inactive_users": 1,
        "pages": 2,
        "knowledge": 2,
        "profile_versions": 1,
        "chat_replies": 1,
    }
    assert removed["inactive_users"] == 0
    assert all(Page.objects.filter(pk=p.pk).exists() for p in acme["alice_memory"]["old_pages"])
    assert EndUser.objects.get(pk=acme["carol"].pk).is_active
    assert AuditEntry.objects.filter(pk=pinned.pk).exists()  # her old entries stay too
