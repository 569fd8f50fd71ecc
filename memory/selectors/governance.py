"""Reads of a tenant's governance records: its audit log (as the API filters it), GDPR exports, erasure receipts
and API tokens.

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist; `<entity>_list` returns a queryset,
newest first. The console's audit search (by name, actor, dates) is memory.selectors.console.audit_entries.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from memory.models import ApiToken, AuditEntry, EndUser, ErasureReceipt, ExportJob, MemoryImport, Tenant


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
