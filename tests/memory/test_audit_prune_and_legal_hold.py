"""Retention's audit prune and placing a legal hold are serialised on the tenant's audit lock: a hold placed while a
prune is planned or waiting still keeps its user's entries, and a hold placed while a prune runs waits for it.

Each test holds one side's transaction open in a thread, starts the other side, waits (up to a timeout) until
PostgreSQL shows it blocked on the advisory lock, and only then lets the first side commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from memory.models import AuditEntry, LegalHold
from memory.selectors.governance import audit_verify
from memory.selectors.retention import retention_plan
from memory.services.audit import Actor, audit_record
from memory.services.legal_hold import legal_hold_place
from memory.services.retention import retention_apply, retention_policy_set
from tests import builders

DPO = Actor("operator", "9", "dana")
NOW = timezone.now() + timedelta(days=800)  # every entry written now is past a year old by then
WAIT = 10.0  # seconds to wait for the other side to block: it blocks at once unless the locking is wrong

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice():
    """Alice with three audit entries about her, in a tenant whose policy keeps the audit log for a year."""
    alice = builders.end_user(tenant="acme", external_id="alice")
    retention_policy_set(tenant=alice.tenant, limits={"audit_entries": 365}, actor=DPO)
    for n in range(3):
        audit_record(tenant=alice.tenant, actor=DPO, action="test.read", end_user=alice, detail={"n": n})
    return alice


class Side(threading.Thread):
    """One side of the race, in its own thread and database connection; `hold_open` keeps its transaction
    uncommitted after `work` until `commit` is set."""

    def __init__(self, work: Callable[[], object], *, hold_open: bool = False) -> None:
        super().__init__(daemon=True)
        self.work, self.hold_open = work, hold_open
        self.done, self.commit = threading.Event(), threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with transaction.atomic():
                self.work()
                self.done.set()
                if self.hold_open:
                    assert self.commit.wait(WAIT * 3), "the test never let this side commit"
        except BaseException as exc:  # surfaced by finish()
            self.error = exc
        finally:
            self.done.set()
            connection.close()

    def finish(self) -> None:
        self.commit.set()
        self.join(WAIT * 3)
        assert not self.is_alive(), "this side never finished"
        if self.error is not None:
            raise self.error


def blocked_on_the_audit_lock() -> None:
    """Wait until another connection of this database waits on an advisory lock; fail after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.02)
    pytest.fail(f"nothing waited on the audit lock within {WAIT} s")


def entries_about(alice) -> int:
    return AuditEntry.objects.filter(tenant=alice.tenant, action="test.read", subject_id=alice.pk).count()


def test_a_hold_placed_after_the_plan_but_before_the_prune_keeps_the_users_entries(alice):
    plan = retention_plan(tenant=alice.tenant, now=NOW)
    assert plan.audit_entries >= 3  # made before the hold: Alice's entries are in it
    hold = Side(lambda: legal_hold_place(end_user=alice, actor=DPO, reason="litigation 2026-114"), hold_open=True)
    hold.start()
    assert hold.done.wait(WAIT)
    prune = Side(lambda: retention_apply(plan=plan))
    prune.start()

    blocked_on_the_audit_lock()
    hold.finish()
    prune.finish()

    assert entries_about(alice) == 3
    assert audit_verify(tenant=alice.tenant).ok


def test_a_hold_placed_while_a_prune_runs_waits_for_it_and_is_recorded_after_it(alice):
    plan = retention_plan(tenant=alice.tenant, now=NOW)
    prune = Side(lambda: retention_apply(plan=plan), hold_open=True)
    prune.start()
    assert prune.done.wait(WAIT)
    hold = Side(lambda: legal_hold_place(end_user=alice, actor=DPO, reason="litigation 2026-114"))
    hold.start()

    blocked_on_the_audit_lock()
    assert not LegalHold.objects.exists()  # not placed while the prune holds the lock
    prune.finish()
    hold.finish()

    pruned = AuditEntry.objects.get(tenant=alice.tenant, action="audit.prune")
    placed = AuditEntry.objects.get(tenant=alice.tenant, action="legal_hold.place")
    assert pruned.seq < placed.seq  # the prune came first: the hold keeps what it left
    assert entries_about(alice) == 1  # the newest of the three, which a prune never removes
    assert LegalHold.objects.filter(end_user=alice, released_at__isnull=True).exists()
    assert audit_verify(tenant=alice.tenant).ok
