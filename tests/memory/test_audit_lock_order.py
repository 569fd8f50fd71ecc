"""An audit entry about a user locks the user's row before the tenant's chain, as an erasure does, so the two never
wait for each other (a read audited during an erasure of its user deadlocked under load)."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import connection, connections

from memory.models import AuditEntry
from memory.services.audit import AUDIT_LOCK_NAMESPACE, Actor, audit_record
from tests import builders

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_entry_about_a_user_waits_for_the_users_row_before_taking_the_chain():
    end_user = builders.end_user(tenant="locks")
    chain = [AUDIT_LOCK_NAMESPACE, end_user.tenant_id % 2_147_483_647]
    with psycopg.connect(**connection.get_connection_params()) as eraser:
        # the eraser's order: the user's row, then (below) the chain
        eraser.execute("SELECT 1 FROM memory_enduser WHERE id = %s FOR UPDATE", [end_user.pk])
        recorded = []

        def audited_read() -> None:
            try:
                entry = audit_record(
                    tenant=end_user.tenant_id, actor=Actor.system("test"), action="memory.read", end_user=end_user
                )
                recorded.append(entry.pk)
            finally:
                connections.close_all()

        reader = threading.Thread(target=audited_read)
        reader.start()
        reader.join(timeout=1)
        assert reader.is_alive(), "the reader waits for the user's row"
        eraser.execute("SET LOCAL lock_timeout = '5s'")
        eraser.execute("SELECT pg_advisory_xact_lock(%s, %s)", chain)  # free: the reader holds no chain lock yet
        eraser.commit()
    reader.join(timeout=10)
    assert recorded and AuditEntry.objects.filter(pk=recorded[0]).exists()
