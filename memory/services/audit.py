"""Writing and tombstoning the audit trail (its hashes are memory.audit_chain's; the check that they hold is
memory.selectors.governance.audit_verify)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from memory.audit_chain import GENESIS, chain_hash, content_digest, tombstone_mac
from memory.models import ActorKind, AuditAnchor, AuditEntry, EndUser, LegalHold, PersonalDataPolicy, Tenant
from memory.personal_data import mask_json
from memory.services.personal_data_policy import do_not_store_mask

AUDIT_LOCK_NAMESPACE = 0x415544  # "AUD"
# Detail values that are not masked: made by code, never a person (a hash must stay whole), or, for a read's `what`,
# made by code around a person's words already masked with the console's stricter policy (dashboard/cases.py): the
# reads an operator's every page records then cost no query for the policy.
UNMASKED = frozenset({"prefix", "fingerprint", "receipt_hash", "anchor_hash", "expires_at", "what"})


@dataclass(frozen=True)
class Actor:
    """Who acts: an operator, an end user, a system task or an API token. `label` is shown, `id` is hashed."""

    kind: str
    id: str
    label: str = ""

    @classmethod
    def operator(cls, user) -> Actor:
        return cls(ActorKind.OPERATOR, str(user.pk), user.get_username())

    @classmethod
    def end_user(cls, end_user: EndUser) -> Actor:
        return cls(ActorKind.END_USER, str(end_user.pk), "the end user")

    @classmethod
    def system(cls, task: str) -> Actor:
        return cls(ActorKind.SYSTEM, task, task)

    @classmethod
    def api_token(cls, token_id: int, name: str) -> Actor:
        return cls(ActorKind.API_TOKEN, str(token_id), name)


def _normalised(value):
    """The value as the database's JSON will give it back, so digests are reproducible."""
    return None if value is None else json.loads(json.dumps(value, default=str))


def audit_record(
    *,
    tenant: Tenant | int,
    actor: Actor,
    action: str,
    end_user: EndUser | None = None,
    target_type: str = "",
    target_id: int | None = None,
    reason: str = "",
    before=None,
    after=None,
    detail: dict | None = None,
    request_id: str = "",
    policy: PersonalDataPolicy | None = None,
) -> AuditEntry:
    """Append one entry to the tenant's chain, inside the caller's transaction (it rolls back with the action, and
    a failure here fails the caller's transaction: no savepoint is taken).

    Its free text (the reason, and the strings of before, after and detail) is stored with the tenant's
    do-not-store personal data masked, before it is hashed: entries are append-only, so no re-scan could remove it
    later. That costs one query when there is any text, unless the caller passes the tenant's `policy`."""
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    texts = (reason, _normalised(before), _normalised(after), detail)
    reason, before, after, detail = _masked(tenant_id, *texts, policy=policy)
    entry = AuditEntry(
        tenant_id=tenant_id,
        actor_kind=actor.kind,
        actor_id=actor.id[:64],
        actor_label=actor.label[:200],
        action=action,
        end_user=end_user,
        subject_id=end_user.pk if end_user else None,
        target_type=target_type,
        target_id=target_id,
        request_id=request_id[:64],
        reason=reason,
        before=before,
        after=after,
        detail=detail,
    )
    with transaction.atomic(savepoint=False):  # inside a caller's transaction, no savepoint (two round trips)
        audit_lock(tenant_id, end_user_ids=[end_user.pk] if end_user else ())
        _chain_append(tenant_id, [entry])
    return entry


def _masked(
    tenant_id: int, reason: str, before, after, detail: dict | None, *, policy: PersonalDataPolicy | None = None
) -> tuple:
    """The entry's free text with the tenant's do-not-store categories masked (no query when there is none, or when
    the caller passed the tenant's `policy`)."""
    detail = _normalised(detail or {})
    if not (reason or _has_text(before) or _has_text(after) or _has_text(detail)):
        return reason, before, after, detail
    mask = do_not_store_mask(tenant=tenant_id, policy=policy)
    if mask is None:
        return reason, before, after, detail
    return (mask(reason), *(mask_json(value, mask, keep=UNMASKED) for value in (before, after, detail)))


def _has_text(value) -> bool:
    if isinstance(value, str):
        return bool(value)
    if isinstance(value, dict):
        return any(_has_text(item) for key, item in value.items() if key not in UNMASKED)
    if isinstance(value, list | tuple):
        return any(_has_text(item) for item in value)
    return False


def audit_record_many(
    *, tenant_id: int, actor: Actor, action: str, end_user_ids: Iterable[int], detail: dict, request_id: str = ""
) -> list[AuditEntry]:
    """Append one entry per end user (the same action, actor and detail), in a constant number of queries whatever
    their number: a read of a list that shows several users' memory is audited once per user."""
    user_ids = sorted(set(end_user_ids))
    entries = [
        AuditEntry(
            tenant_id=tenant_id, actor_kind=actor.kind, actor_id=actor.id[:64], actor_label=actor.label[:200],
            action=action, end_user_id=user_id, subject_id=user_id, request_id=request_id[:64],
            detail=_normalised(detail),
        )
        for user_id in user_ids
    ]  # fmt: skip
    if not entries:
        return []
    with transaction.atomic(savepoint=False):
        audit_lock(tenant_id, end_user_ids=user_ids)
        _chain_append(tenant_id, entries)
    return entries


def _chain_append(tenant_id: int, entries: list[AuditEntry]) -> None:
    """Number, date, link and hash `entries` after the chain's last entry, then insert them (under the chain lock)."""
    last = AuditEntry.objects.filter(tenant_id=tenant_id).order_by("-seq").values("seq", "hash").first()
    seq, previous = (last["seq"], last["hash"]) if last else (0, GENESIS)
    now = timezone.now()
    for entry in entries:
        seq += 1
        entry.seq, entry.created_at, entry.prev_hash = seq, now, previous
        entry.content_digest = content_digest(entry)
        entry.hash = previous = chain_hash(entry)
    AuditEntry.objects.bulk_create(entries)


# The users' rows (the locks an entry's foreign key takes when the transaction commits) first, in id order, then the
# chain: the subquery's count ends only once the rows are locked, and the advisory lock is taken in the outer
# projection.
USERS_THEN_CHAIN_SQL = """
SELECT pg_advisory_xact_lock(%s, %s)
FROM (SELECT count(*) FROM (
    SELECT 1 FROM memory_enduser WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE
) AS row_lock) AS users_locked
"""


def audit_lock(tenant_id: int, *, end_user_ids: Iterable[int] = ()) -> None:
    """Serialise changes to the tenant's audit chain until the transaction ends: appending an entry, pruning, and
    placing a legal hold (so that a prune reads every hold placed before it, and a hold placed after it waits).

    With `end_user_ids`, those users' rows are locked first (FOR KEY SHARE, in id order), in the same statement:
    the order every writer takes them in (an erasure or a legal hold locks the user, then appends to the chain).
    An entry about a user otherwise took the chain first and the user's row only at commit (its foreign key's
    check), and deadlocked with an erasure of that user that waited for the chain (seen under load: a read
    answered 500).
    """
    chain = [AUDIT_LOCK_NAMESPACE, tenant_id % 2_147_483_647]
    users = sorted(set(end_user_ids))
    with connection.cursor() as cursor:
        if not users:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", chain)
        else:
            cursor.execute(USERS_THEN_CHAIN_SQL, [*chain, users])


@transaction.atomic
def audit_prune(*, tenant: Tenant, through_seq: int, actor: Actor, reason: str) -> int:
    """Delete the tenant's oldest entries, up to `through_seq`, keeping the rest verifiable (retention).

    The last removed entry's number and hash become the chain's anchor (AuditAnchor), which audit_verify starts
    from; a new entry records the anchor too, so the anchor itself is covered by the chain. The newest entry is
    never removed (the next entry links to it), nor any entry from the first one about a user under legal hold on.
    The holds are read under the tenant's audit lock, which `legal_hold_place` takes before it places one: a hold
    placed before the prune is seen, however late, and one placed meanwhile waits for the prune to commit. Returns
    how many entries were removed; 0 when nothing was older.
    """
    audit_lock(tenant.pk)
    newest = AuditEntry.objects.filter(tenant=tenant).order_by("-seq").values_list("seq", flat=True).first() or 0
    held = LegalHold.objects.filter(tenant=tenant, released_at__isnull=True).values("end_user_id")
    kept = AuditEntry.objects.filter(tenant=tenant, subject_id__in=held, seq__lte=through_seq)
    first_kept = kept.order_by("seq").values_list("seq", flat=True).first()
    through_seq = min(through_seq, newest - 1, (first_kept or newest) - 1)
    last = AuditEntry.objects.filter(tenant=tenant, seq=through_seq).values_list("hash", flat=True).first()
    if last is None:
        return 0
    with connection.cursor() as cursor:  # the append-only guard lets this transaction's deletes through
        cursor.execute("SET LOCAL memoryos.audit_maintenance = 'on'")
    removed, _ = AuditEntry.objects.filter(tenant=tenant, seq__lte=through_seq).delete()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL memoryos.audit_maintenance = 'off'")
    anchor, created = AuditAnchor.objects.get_or_create(
        tenant=tenant, defaults={"seq": through_seq, "hash": last, "removed": removed}
    )
    if not created:
        AuditAnchor.objects.filter(pk=anchor.pk).update(seq=through_seq, hash=last, removed=anchor.removed + removed)
    audit_record(
        tenant=tenant, actor=actor, action="audit.prune", target_type="audit_anchor", target_id=through_seq,
        reason=reason, detail={"removed": removed, "anchor_seq": through_seq, "anchor_hash": last},
    )  # fmt: skip
    return removed


TOMBSTONE_FIELDS = ["erased", "actor_label", "reason", "before", "after", "detail", "tombstone_mac"]


def _tombstone(entries) -> int:
    """Empty the content of `entries`, keeping digests so the chain verifies, and seal each with its tombstone MAC.

    An operator's or token's name is not the end user's data: it stays, so the tombstone still says who acted.
    The end user's own label is emptied. The database lets an entry become a tombstone only in a transaction that
    says it is tombstoning (`memoryos.audit_tombstone`, set here and nowhere else), and verification accepts only
    tombstones whose MAC, which needs MEMORY_AUDIT_KEY, covers what they kept. Entries already tombstoned are
    skipped (idempotent).
    """
    entries = entries.filter(erased=False)
    tombstones = []
    for entry in entries.only("pk", "hash", "actor_kind", "actor_label"):
        entry.erased, entry.reason, entry.before, entry.after, entry.detail = True, "", None, None, {}
        entry.actor_label = "" if entry.actor_kind == ActorKind.END_USER else entry.actor_label
        entry.tombstone_mac = tombstone_mac(entry)
        tombstones.append(entry)
    if not tombstones:
        return 0
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:  # SET LOCAL needs a transaction
        cursor.execute("SET LOCAL memoryos.audit_tombstone = 'on'")
        changed = entries.bulk_update(tombstones, TOMBSTONE_FIELDS, batch_size=500)
        cursor.execute("SET LOCAL memoryos.audit_tombstone = 'off'")
    return changed


def audit_tombstone_subject(*, tenant: Tenant, subject_id: int) -> int:
    """Tombstone every entry about an end user (erasure)."""
    return _tombstone(AuditEntry.objects.filter(tenant=tenant, subject_id=subject_id))


def audit_tombstone_actor(*, tenant: Tenant, end_user_id: int) -> int:
    """Also tombstone entries where the erased end user was the actor (their label is personal data)."""
    return _tombstone(
        AuditEntry.objects.filter(tenant=tenant, actor_kind=ActorKind.END_USER, actor_id=str(end_user_id))
    )


def audit_tombstone_target(*, tenant_id: int, target_type: str, target_id: int) -> int:
    """Tombstone earlier entries about an item that is being forgotten (edits quote it)."""
    return _tombstone(AuditEntry.objects.filter(tenant_id=tenant_id, target_type=target_type, target_id=target_id))


def audit_tombstone_entries(*, ids: list[int]) -> int:
    """Tombstone the given entries: forgetting found that their reason, before or after quote forgotten memory."""
    return _tombstone(AuditEntry.objects.filter(pk__in=ids)) if ids else 0
