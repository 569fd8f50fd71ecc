"""The audit trail is append-only and tamper-evident; erasure leaves tombstones that still verify."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from memory.models import AuditEntry
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor, audit_record, audit_tombstone_subject
from tests import builders


@pytest.fixture
def trail(space):
    actor = Actor("operator", "7", "sam")
    for i in range(3):
        audit_record(
            tenant=space.tenant,
            actor=actor,
            action="knowledge.edit",
            end_user=space.end_user,
            target_type="knowledgeentry",
            target_id=i,
            reason=f"typo {i}",
            before={"text": "old"},
            after={"text": "new"},
        )
    return space


def test_entries_are_numbered_and_linked_per_tenant(trail):
    entries = list(AuditEntry.objects.order_by("seq"))
    assert [e.seq for e in entries] == [1, 2, 3]
    assert entries[1].prev_hash == entries[0].hash and entries[2].prev_hash == entries[1].hash
    assert audit_verify(tenant=trail.tenant).ok


def test_another_tenant_has_its_own_chain(trail):
    other = builders.space_of(builders.end_user(tenant="globex", external_id="gus"))
    audit_record(tenant=other.tenant, actor=Actor.system("test"), action="memory.read", end_user=other.end_user)
    assert AuditEntry.objects.get(tenant=other.tenant).seq == 1


def test_the_database_refuses_to_change_or_delete_an_entry(trail):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(seq=2).update(reason="nothing to see")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(seq=2).delete()


def tamper(sql: str, params: list) -> None:
    """Change an entry behind the application's back, as an attacker with database access would."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # a superuser can bypass triggers
        cursor.execute(sql, params)
        cursor.execute("SET LOCAL session_replication_role = origin")


def test_verification_names_the_first_entry_whose_content_was_changed(trail):
    tamper("UPDATE memory_auditentry SET reason = 'covered up' WHERE seq = 2", [])
    report = audit_verify(tenant=trail.tenant)
    assert (report.ok, report.first_broken_seq, report.problem) == (False, 2, "its content was changed")


def test_verification_notices_a_deleted_entry(trail):
    tamper("DELETE FROM memory_auditentry WHERE seq = 2", [])
    report = audit_verify(tenant=trail.tenant)
    assert (report.ok, report.first_broken_seq) == (False, 3)


def test_verification_notices_a_rewritten_chain_link(trail):
    tamper("UPDATE memory_auditentry SET action = 'memory.read' WHERE seq = 1", [])
    report = audit_verify(tenant=trail.tenant)
    assert (report.ok, report.first_broken_seq, report.problem) == (False, 1, "its hash does not match its fields")


def test_tombstones_keep_who_when_and_what_kind_but_no_content_and_still_verify(trail):
    assert audit_tombstone_subject(tenant=trail.tenant, subject_id=trail.end_user.pk) == 3
    entry = AuditEntry.objects.get(seq=2)
    assert (entry.erased, entry.reason, entry.before, entry.after) == (True, "", None, None)
    assert entry.actor_label == "sam"  # the operator's name is not the end user's data
    assert (entry.actor_kind, entry.action, entry.target_type) == ("operator", "knowledge.edit", "knowledgeentry")
    assert audit_verify(tenant=trail.tenant).ok


def test_deleting_the_end_user_keeps_their_tombstones(trail):
    audit_tombstone_subject(tenant=trail.tenant, subject_id=trail.end_user.pk)
    subject = trail.end_user.pk
    trail.end_user.delete()
    assert AuditEntry.objects.filter(subject_id=subject, end_user__isnull=True).count() == 3
    assert audit_verify(tenant=trail.tenant).ok


def test_the_audit_verify_command_reports_ok_and_the_first_broken_link(trail):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("audit_verify", "--tenant", trail.tenant.slug, stdout=out)
    assert "OK, 3 entries" in out.getvalue()
    tamper("UPDATE memory_auditentry SET reason = 'x' WHERE seq = 3", [])
    with pytest.raises(CommandError, match="does not verify"):
        call_command("audit_verify", stdout=(out := StringIO()))
    assert "BROKEN at entry 3: its content was changed" in out.getvalue()
