"""Finding 7: only the tombstoning service makes a tombstone (the database refuses a plain UPDATE), what a tombstone
kept is inside its MAC, and the chain is an HMAC under MEMORY_AUDIT_KEY, a key the database does not hold."""

from __future__ import annotations

import hashlib
from datetime import UTC

import pytest
from django.db import DatabaseError, connection, transaction

from memory.models import AuditEntry
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor, audit_record, audit_tombstone_subject
from tests.memory.migrating import latest, migrate

BEFORE = [("memory", "0026_government_id_patterns_linear")]
TOMBSTONE = {"erased": True, "reason": "", "before": None, "after": None, "detail": {}}


@pytest.fixture
def trail(alice):
    for i in range(3):
        audit_record(
            tenant=alice.tenant, actor=Actor("operator", "7", "sam"), action="knowledge.edit", end_user=alice,
            target_type="knowledge", target_id=i, reason=f"typo {i}", before={"text": "old"}, after={"text": "new"},
        )  # fmt: skip
    return alice


def tamper(sql: str, params: list | None = None) -> None:
    """Change entries behind the application's back, as someone with write access to the database would."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # bypasses the append-only guard
        cursor.execute(sql, params or [])
        cursor.execute("SET LOCAL session_replication_role = origin")


def test_a_plain_update_cannot_turn_a_live_entry_into_a_tombstone(trail):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEntry.objects.filter(seq=2).update(**TOMBSTONE)
    assert not AuditEntry.objects.filter(erased=True).exists()


def test_a_tombstone_made_behind_the_services_back_fails_verification(trail):
    tamper("UPDATE memory_auditentry SET erased = true, reason = '', before = NULL, after = NULL WHERE seq = 2")
    report = audit_verify(tenant=trail.tenant)
    assert (report.ok, report.first_broken_seq) == (False, 2)
    assert report.problem == "its tombstone was not made by erasure or was changed since"


def test_the_tombstoning_service_makes_tombstones_that_verify(trail):
    assert audit_tombstone_subject(tenant=trail.tenant, subject_id=trail.pk) == 3
    assert all(entry.tombstone_mac for entry in AuditEntry.objects.all())
    assert audit_verify(tenant=trail.tenant).ok


@pytest.mark.parametrize(
    "rewrite",
    [
        "UPDATE memory_auditentry SET actor_label = 'someone else' WHERE seq = 2",
        "UPDATE memory_auditentry SET reason = 'a reason written later' WHERE seq = 2",
        """UPDATE memory_auditentry SET detail = '{"note": "added"}' WHERE seq = 2""",
    ],
)
def test_rewriting_what_a_tombstone_kept_is_detected(trail, rewrite):
    audit_tombstone_subject(tenant=trail.tenant, subject_id=trail.pk)
    tamper(rewrite)
    report = audit_verify(tenant=trail.tenant)
    assert (report.ok, report.first_broken_seq) == (False, 2)


def test_a_chain_recomputed_without_the_key_fails_verification(trail):
    entry = AuditEntry.objects.get(seq=3)
    entry.action = "memory.read"
    unkeyed = hashlib.sha256(chain_hash_text(entry).encode()).hexdigest()  # the old, unkeyed algorithm
    tamper("UPDATE memory_auditentry SET action = 'memory.read', hash = %s WHERE seq = 3", [unkeyed])
    report = audit_verify(tenant=trail.tenant)
    assert (report.ok, report.first_broken_seq, report.problem) == (False, 3, "its hash does not match its fields")


def test_the_chain_verifies_only_under_its_own_key(trail, settings):
    assert audit_verify(tenant=trail.tenant).ok
    settings.MEMORY_AUDIT_KEY = "a key someone guessed"
    assert not audit_verify(tenant=trail.tenant).ok


def test_the_default_key_is_derived_from_the_secret_key_and_is_not_the_secret_key_itself(settings):
    assert len(settings.MEMORY_AUDIT_KEY) == 64 and settings.MEMORY_AUDIT_KEY != settings.SECRET_KEY


def unkeyed_hash_holds(seq: int) -> bool:
    """Whether entry `seq`'s stored hash is the unkeyed SHA-256 of its fields (read with SQL: the schema is older)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT hash FROM memory_auditentry WHERE seq = %s", [seq])
        stored = cursor.fetchone()[0]
    entry = AuditEntry.objects.only(*FIELDS_BEFORE).get(seq=seq)
    return hashlib.sha256(chain_hash_text(entry).encode()).hexdigest() == stored


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_chain_written_before_the_key_verifies_after_the_migration_tombstones_included(trail):
    audit_tombstone_subject(tenant=trail.tenant, subject_id=trail.pk)
    audit_record(tenant=trail.tenant, actor=Actor.system("test"), action="memory.read")
    try:
        migrate(BEFORE)
        assert unkeyed_hash_holds(4)
        migrate(latest())
        assert audit_verify(tenant=trail.tenant).ok
        assert AuditEntry.objects.filter(erased=True).exclude(tombstone_mac="").count() == 3
    finally:
        migrate(latest())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_migration_refuses_to_key_a_chain_that_no_longer_verifies(trail):
    try:
        migrate(BEFORE)
        tamper("UPDATE memory_auditentry SET reason = 'covered up' WHERE seq = 2")
        with pytest.raises(RuntimeError, match="does not verify at entry 2"):
            migrate(latest())
    finally:
        tamper("UPDATE memory_auditentry SET reason = 'typo 1' WHERE seq = 2")
        migrate(latest())


FIELDS_BEFORE = [f.name for f in AuditEntry._meta.concrete_fields if f.name != "tombstone_mac"]


def chain_hash_text(entry: AuditEntry) -> str:
    """The fields the chain covers, joined as the hash joins them (what an attacker would recompute)."""
    parts = [
        entry.prev_hash, str(entry.tenant_id), str(entry.seq), entry.created_at.astimezone(UTC).isoformat(),
        entry.actor_kind, entry.actor_id, entry.action, "" if entry.subject_id is None else str(entry.subject_id),
        entry.target_type, "" if entry.target_id is None else str(entry.target_id), entry.request_id,
        entry.content_digest,
    ]  # fmt: skip
    return "|".join(parts)
