"""Retention at a tenant's scale: twenty users with two topics, facts, profile versions and replies each, all old,
two of them inactive. The run removes exactly the plan, within a pinned number of queries; a later run prunes the
audit log and the chain still verifies. `-s` prints the figures docs/results.md quotes."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.selectors.governance import audit_verify
from memory.selectors.retention import retention_plan
from memory.services.audit import Actor
from memory.services.retention import retention_policy_set, retention_run
from tests import builders

pytestmark = pytest.mark.slow
POLICY = {
    "pages": 180,
    "knowledge": 365,
    "profile_versions": 365,
    "chat_replies": 90,
    "audit_entries": 365,
    "inactive_users": 6,
}


def _tenant_memory(tenant, assistant, now) -> None:
    users = builders.end_users(tenant, count=20)
    for user in users:
        space = builders.space_of(user, assistant)
        for t in range(2):
            messages = [f"I like thing {t} {i}." for i in range(5)]
            topic = builders.segment_with_pages(space, summary=f"topic {t} of {user.external_id}", messages=messages)
            builders.knowledge(user, text=f"The user likes thing {t}", source_pages=list(topic.pages.all()))
        for i in range(3):
            builders.knowledge(user, text=f"The user has pet {i}")
        builders.profile(user, text="Likes things.")
        builders.profile(user, text="Likes more things.")
        for i in range(5):
            builders.reply(space, idempotency_key=f"k{i}")
        builders.backdate(user, last_active_at=now - timedelta(days=1))
    for user in users[:2]:
        builders.backdate(user, last_active_at=now - timedelta(days=400))


def test_a_run_over_a_tenant_removes_its_plan_and_a_later_one_prunes_the_audit(
    tenant, assistant, django_assert_max_num_queries
):
    now = timezone.now() + timedelta(days=800)
    _tenant_memory(tenant, assistant, now)
    retention_policy_set(tenant=tenant, limits=POLICY, actor=Actor.system("test"))
    with django_assert_max_num_queries(10):
        plan = retention_plan(tenant=tenant, now=now, limit=1000)
    start = time.perf_counter()
    # a fixed cost per user whose facts go (their profile's re-derivation job and its lease included)
    with django_assert_max_num_queries(3018):
        run = retention_run(tenant=tenant, trigger="command", now=now, limit=1000)
    print(f"\nrun: {run.removed} along with {run.derived} in {time.perf_counter() - start:.2f} s")
    assert run.removed == plan.counts() == {
        "inactive_users": 2, "pages": 180, "knowledge": 90, "profile_versions": 36, "chat_replies": 90,
        "audit_entries": 0,
    }  # fmt: skip
    assert run.derived == {"segments": 36, "knowledge": 36} and run.receipts.count() == 2

    later = now + timedelta(days=400)  # the run's own audit entries are old by then, and everyone inactive
    start = time.perf_counter()
    # erasing a user also collects the visits queued for their segments (SegmentVisit), one query per batch; its
    # tombstones are read to be sealed with their MAC, under the tombstoning setting (set and reset), and its legal
    # hold is read under the user's row lock; each audit entry with a reason reads the policy it is masked with; and
    # the webhook events that named what a user forgot lose its text (one query per user whose memory went)
    with django_assert_max_num_queries(1354):
        prune = retention_run(tenant=tenant, trigger="command", now=later, limit=1000)
    print(f"later run: {prune.removed} in {time.perf_counter() - start:.2f} s")
    report = audit_verify(tenant=tenant)
    assert prune.removed["audit_entries"] == 128 and report.ok and report.anchored_after == 128
