"""Reads of a tenant's governance records: its audit log (as the API filters it, and whether its chain holds), GDPR
exports, erasure receipts and API tokens.

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist; `<entity>_list` returns a queryset,
newest first. The console's audit search (by name, actor, dates) is memory.selectors.console.audit_entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from memory.audit_chain import GENESIS, chain_hash, content_digest, tombstone_mac
from memory.models import ApiToken, AuditAnchor, AuditEntry, EndUser, ErasureReceipt, ExportJob, MemoryImport, Tenant


def audit_entry_list(
    *,
    tenant: Tenant,
    user_external_id: str | None = None,
    subject_id: int | None = None,
    action: str | None = None,
    actor_kind: str | None = None,
    target_type: str | None = None,
    target_id: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[AuditEntry]:
    """The tenant's audit entries, newest first, narrowed by exact values; `since` inclusive, `until` exclusive."""
    lookups = {
        "end_user__external_id": user_external_id,
        "subject_id": subject_id,
        "action": action,
        "actor_kind": actor_kind,
        "target_type": target_type,
        "target_id": target_id,
        "created_at__gte": since,
        "created_at__lt": until,
    }
    entries = AuditEntry.objects.filter(tenant=tenant).select_related("end_user").order_by("-seq")
    return entries.filter(**{lookup: value for lookup, value in lookups.items() if value is not None})


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    checked: int
    first_broken_seq: int | None = None
    problem: str = ""
    anchored_after: int = 0  # entries up to this one were removed by retention; the chain starts from its hash
    since: datetime | None = None  # when the first entry was written (None for an empty chain)


def audit_verify(*, tenant: Tenant) -> ChainReport:
    """Walk the tenant's chain in order; report the first entry whose content, hash or link does not hold.

    After retention removed the oldest entries, the walk starts from the anchor (the last removed entry's number
    and hash) instead of the genesis hash, so the rest of the chain still proves itself."""
    anchor = AuditAnchor.objects.filter(tenant=tenant).values_list("seq", "hash").first()
    anchored_after, previous = anchor or (0, GENESIS)
    checked = 0
    since = None
    for entry in AuditEntry.objects.filter(tenant=tenant).order_by("seq").iterator(chunk_size=2000):
        since = since or entry.created_at
        problem = _entry_problem(entry, expected_seq=anchored_after + checked + 1, previous=previous)
        if problem:
            return ChainReport(
                ok=False,
                checked=checked,
                first_broken_seq=entry.seq,
                problem=problem,
                anchored_after=anchored_after,
                since=since,
            )
        previous = entry.hash
        checked += 1
    return ChainReport(ok=True, checked=checked, anchored_after=anchored_after, since=since)


def _entry_problem(entry: AuditEntry, *, expected_seq: int, previous: str) -> str:
    """What does not hold in one entry, or "": its place, its link, its content (or tombstone), its keyed hash."""
    if entry.seq != expected_seq:
        return f"entry {expected_seq} is missing"
    if entry.prev_hash != previous:
        return "its link to the previous entry is broken"
    if entry.erased and entry.tombstone_mac != tombstone_mac(entry):
        return "its tombstone was not made by erasure or was changed since"
    if not entry.erased and (entry.tombstone_mac or content_digest(entry) != entry.content_digest):
        return "its content was changed"
    if chain_hash(entry) != entry.hash:
        return "its hash does not match its fields"
    return ""


def export_job_list(*, tenant: Tenant, end_user: EndUser | None = None) -> QuerySet[ExportJob]:
    """The tenant's (or one end user's) export jobs, newest first: the first is a user's latest."""
    jobs = ExportJob.objects.filter(tenant=tenant).select_related("end_user")
    if end_user is not None:
        jobs = jobs.filter(end_user=end_user)
    return jobs.order_by("-created_at", "-id")


def export_job_get(*, tenant: Tenant, id: int) -> ExportJob:
    return ExportJob.objects.select_related("end_user").get(tenant=tenant, pk=id)


def erasure_receipt_list(*, tenant: Tenant) -> QuerySet[ErasureReceipt]:
    """The tenant's erasure receipts, newest first; they outlive the users they are about."""
    return ErasureReceipt.objects.filter(tenant=tenant).select_related("tenant").order_by("-created_at", "-id")


def erasure_receipt_get(*, tenant: Tenant, id: int) -> ErasureReceipt:
    return ErasureReceipt.objects.select_related("tenant").get(tenant=tenant, pk=id)


def api_token_list(*, tenant: Tenant) -> QuerySet[ApiToken]:
    """The tenant's API tokens, newest first, with who created them; the secret's hash is not read."""
    tokens = ApiToken.objects.filter(tenant=tenant).select_related("created_by").order_by("-created_at")
    return tokens.defer("secret_hash")


def api_token_get(*, tenant: Tenant, id: int) -> ApiToken:
    return ApiToken.objects.get(tenant=tenant, pk=id)


def memory_import_list(*, tenant: Tenant, end_user: EndUser) -> QuerySet[MemoryImport]:
    """The bundles imported into (or staged for) `end_user`, newest first, without the staged bundles' content."""
    return MemoryImport.objects.filter(tenant=tenant, end_user=end_user).defer("bundle").order_by("-created_at", "-id")


def memory_import_get(
    *, tenant: Tenant, id: int, end_user: EndUser | None = None, status: str | None = None
) -> MemoryImport:
    """One import in `tenant` (only of `end_user`, only one with `status`, when given), with its end user."""
    imports = MemoryImport.objects.select_related("end_user__tenant").filter(tenant=tenant)
    imports = imports if end_user is None else imports.filter(end_user=end_user)
    return (imports if status is None else imports.filter(status=status)).get(pk=id)
