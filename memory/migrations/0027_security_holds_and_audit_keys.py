"""Security findings of issue 29, part A.

- A memory event kind, `hold_kept`: an automatic deletion a legal hold deferred.
- Background imports of large bundles: a memory import may be queued, running or failed, with the actor and
  request id of whoever asked, its progress, its worker's lease and attempts; it holds its bundle until it ends.
- Audit tombstones only by the tombstoning service: the append-only guard lets an entry become a tombstone only in
  a transaction that set `memoryos.audit_tombstone` (memory.services.audit._tombstone), with a tombstone MAC.
- The audit chain keyed: every tenant's chain is verified with the unkeyed SHA-256 it was written with, then
  hashed again with HMAC-SHA256 under MEMORY_AUDIT_KEY, and each tombstone sealed with its MAC. A chain that does
  not verify is not re-keyed (that would launder the break): the migration stops and names the tenant and entry.
  One pass over the audit table, with the guard disabled for the transaction only.
"""

import hashlib
import hmac
import json
from datetime import UTC

from django.conf import settings
from django.db import migrations, models

GENESIS = "0" * 64
FIELDS_OF_THE_HASH = ["hash", "prev_hash", "tombstone_mac"]

AUDIT_GUARD = """
CREATE OR REPLACE FUNCTION memoryos_audit_guard() RETURNS trigger AS $$
DECLARE
    content_keys text[] := ARRAY['erased', 'reason', 'before', 'after', 'detail', 'actor_label', 'end_user_id',
                                 'tombstone_mac'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF current_setting('memoryos.audit_maintenance', true) = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be deleted', OLD.id;
    END IF;
    -- the end user's row was deleted (ON DELETE SET NULL): nothing else may change
    IF NEW.end_user_id IS NULL AND (to_jsonb(NEW) - 'end_user_id') = (to_jsonb(OLD) - 'end_user_id') THEN
        RETURN NEW;
    END IF;
    -- the tombstoning service turns an entry into a tombstone: content emptied (the actor's label may stay),
    -- metadata untouched, sealed with its MAC
    IF NEW.erased AND NOT OLD.erased
        AND current_setting('memoryos.audit_tombstone', true) = 'on'
        AND NEW.tombstone_mac <> ''
        AND (to_jsonb(NEW) - content_keys) = (to_jsonb(OLD) - content_keys)
        AND NEW.reason = '' AND NEW.before IS NULL AND NEW.after IS NULL
        AND NEW.detail = '{}'::jsonb AND (NEW.actor_label = '' OR NEW.actor_label = OLD.actor_label)
        AND (NEW.end_user_id IS NULL OR NEW.end_user_id = OLD.end_user_id) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be changed', OLD.id;
END;
$$ LANGUAGE plpgsql;
"""

PREVIOUS_GUARD = """
CREATE OR REPLACE FUNCTION memoryos_audit_guard() RETURNS trigger AS $$
DECLARE
    content_keys text[] := ARRAY['erased', 'reason', 'before', 'after', 'detail', 'actor_label', 'end_user_id'];
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF current_setting('memoryos.audit_maintenance', true) = 'on' THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be deleted', OLD.id;
    END IF;
    -- the end user's row was deleted (ON DELETE SET NULL): nothing else may change
    IF NEW.end_user_id IS NULL AND (to_jsonb(NEW) - 'end_user_id') = (to_jsonb(OLD) - 'end_user_id') THEN
        RETURN NEW;
    END IF;
    -- erasure turns an entry into a tombstone: content emptied (the actor's label may stay), metadata untouched
    IF NEW.erased AND NOT OLD.erased
        AND (to_jsonb(NEW) - content_keys) = (to_jsonb(OLD) - content_keys)
        AND NEW.reason = '' AND NEW.before IS NULL AND NEW.after IS NULL
        AND NEW.detail = '{}'::jsonb AND (NEW.actor_label = '' OR NEW.actor_label = OLD.actor_label)
        AND (NEW.end_user_id IS NULL OR NEW.end_user_id = OLD.end_user_id) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: entry % cannot be changed', OLD.id;
END;
$$ LANGUAGE plpgsql;
"""


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _content_digest(entry) -> str:
    content = {k: getattr(entry, k) for k in ("actor_label", "reason", "before", "after", "detail")}
    return hashlib.sha256(_canonical(content).encode()).hexdigest()


def _chain_text(entry, previous: str) -> str:
    """The fields the chain hash covers, as memory.services.audit.chain_hash joins them."""
    parts = [
        previous,
        str(entry.tenant_id),
        str(entry.seq),
        entry.created_at.astimezone(UTC).isoformat(),
        entry.actor_kind,
        entry.actor_id,
        entry.action,
        "" if entry.subject_id is None else str(entry.subject_id),
        entry.target_type,
        "" if entry.target_id is None else str(entry.target_id),
        entry.request_id,
        entry.content_digest,
    ]
    return "|".join(parts)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _hmac(text: str) -> str:
    return hmac.new(settings.MEMORY_AUDIT_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def _seal(entry) -> str:
    """The tombstone MAC, as memory.services.audit.tombstone_mac computes it."""
    kept = {k: getattr(entry, k) for k in ("erased", "actor_label", "reason", "before", "after", "detail")}
    return _hmac(f"tombstone|{entry.hash}|{_canonical(kept)}")


def _verifies(entry, expected_seq: int, previous: str, hashed) -> bool:
    """Whether the entry holds as audit_verify checked it before this migration (tombstones had no MAC)."""
    return (
        entry.seq == expected_seq
        and entry.prev_hash == previous
        and (entry.erased or _content_digest(entry) == entry.content_digest)
        and hashed(_chain_text(entry, previous)) == entry.hash
    )


def _tenant_rechain(AuditEntry, tenant_id: int, anchor, was, becomes, seal: bool) -> None:
    """Verify one tenant's chain with the hash `was`, then hash it again with `becomes` (sealing tombstones)."""
    anchored_after, start = anchor or (0, GENESIS)
    previous_was = previous_becomes = start
    batch = []
    entries = AuditEntry.objects.filter(tenant_id=tenant_id).order_by("seq").iterator(chunk_size=2000)
    for expected, entry in enumerate(entries, start=anchored_after + 1):
        if not _verifies(entry, expected, previous_was, was):
            raise RuntimeError(
                f"The audit chain of tenant {tenant_id} does not verify at entry {entry.seq}: it is not re-keyed. "
                "Run `manage.py audit_verify`, investigate, and restore the audit table from a backup."
            )
        previous_was = entry.hash
        entry.prev_hash, entry.hash = previous_becomes, becomes(_chain_text(entry, previous_becomes))
        entry.tombstone_mac = _seal(entry) if seal and entry.erased else ""
        previous_becomes = entry.hash
        batch.append(entry)
        if len(batch) >= 2000:
            AuditEntry.objects.bulk_update(batch, FIELDS_OF_THE_HASH)
            batch = []
    AuditEntry.objects.bulk_update(batch, FIELDS_OF_THE_HASH)


def _rechain(apps, schema_editor, *, was, becomes, seal: bool) -> None:
    AuditEntry = apps.get_model("memory", "AuditEntry")
    anchored = apps.get_model("memory", "AuditAnchor").objects.values_list("tenant_id", "seq", "hash")
    anchors = {tenant_id: (seq, hash_) for tenant_id, seq, hash_ in anchored}
    schema_editor.execute("ALTER TABLE memory_auditentry DISABLE TRIGGER memoryos_audit_guard")
    for tenant_id in AuditEntry.objects.values_list("tenant_id", flat=True).distinct().order_by("tenant_id"):
        _tenant_rechain(AuditEntry, tenant_id, anchors.get(tenant_id), was, becomes, seal)
    schema_editor.execute("ALTER TABLE memory_auditentry ENABLE TRIGGER memoryos_audit_guard")


def chain_keyed(apps, schema_editor) -> None:
    _rechain(apps, schema_editor, was=_sha256, becomes=_hmac, seal=True)


def chain_unkeyed(apps, schema_editor) -> None:
    _rechain(apps, schema_editor, was=_hmac, becomes=_sha256, seal=False)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0026_government_id_patterns_linear"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="tombstone_mac",
            field=models.CharField(blank=True, max_length=64, default=""),
            preserve_default=False,
        ),
        migrations.RunSQL(AUDIT_GUARD, PREVIOUS_GUARD),
        migrations.RunPython(chain_keyed, chain_unkeyed),
        migrations.AlterField(
            model_name="memoryevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("stm_overflow", "Short-term overflow placed a page"),
                    ("segment_created", "Segment created"),
                    ("promotion", "Segment promoted to long-term memory"),
                    ("eviction", "Segment evicted from mid-term memory"),
                    ("knowledge_dropped", "Knowledge entry dropped (FIFO)"),
                    ("paused_drop", "Page dropped while memory was paused"),
                    ("hold_kept", "Deletion deferred: the end user is under legal hold"),
                ],
                max_length=20,
            ),
        ),
        migrations.RemoveConstraint(
            model_name="memoryimport",
            name="memory_import_keeps_no_bundle_once_done",
        ),
        migrations.AddField(
            model_name="memoryimport",
            name="actor",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="memoryimport",
            name="attempts",
            field=models.IntegerField(default=0),
        ),
        migrations.AddField(
            model_name="memoryimport",
            name="error",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="memoryimport",
            name="lease_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="memoryimport",
            name="progress",
            field=models.IntegerField(default=0),
        ),
        migrations.AddField(
            model_name="memoryimport",
            name="request_id",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="memoryimport",
            name="status",
            field=models.CharField(
                choices=[
                    ("staged", "Staged (dry run shown, not imported)"),
                    ("queued", "Queued (a large bundle, imported in the background)"),
                    ("running", "Importing"),
                    ("failed", "Failed"),
                    ("done", "Imported"),
                ],
                max_length=8,
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryimport",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("status__in", ("staged", "queued", "running")), ("bundle__isnull", True), _connector="OR"
                ),
                name="memory_import_keeps_no_bundle_once_done",
            ),
        ),
    ]
