"""The audit chain's hashes, pure functions of an entry's fields: its content digest, its keyed chain hash and a
tombstone's MAC. The writer (memory.services.audit) sets them; the check (memory.selectors.governance.audit_verify)
recomputes them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC

from django.conf import settings

from memory.models import AuditEntry

GENESIS = "0" * 64  # the previous hash of a tenant's first entry


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_digest(entry: AuditEntry) -> str:
    content = {
        "actor_label": entry.actor_label,
        "reason": entry.reason,
        "before": entry.before,
        "after": entry.after,
        "detail": entry.detail,
    }
    return hashlib.sha256(_canonical(content).encode()).hexdigest()


def _mac(text: str) -> str:
    """HMAC-SHA256 under MEMORY_AUDIT_KEY: the database holds no key, so write access to it cannot forge a hash."""
    return hmac.new(settings.MEMORY_AUDIT_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def chain_hash(entry: AuditEntry) -> str:
    parts = [
        entry.prev_hash,
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
    return _mac("|".join(parts))


def tombstone_mac(entry: AuditEntry) -> str:
    """What a tombstone kept (the actor's label, its emptied content), bound to the entry's own hash."""
    kept = {
        "erased": entry.erased,
        "actor_label": entry.actor_label,
        "reason": entry.reason,
        "before": entry.before,
        "after": entry.after,
        "detail": entry.detail,
    }
    return _mac(f"tombstone|{entry.hash}|{_canonical(kept)}")
