"""Reads of data-subject requests: the inbox by deadline, one request, and its timeline from the audit log."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce

from memory.models import AuditEntry, DataSubjectRequest, EndUser, ErasureReceipt, Tenant
from memory.selectors.gdpr import subject_reference_of

TARGET = "data_subject_request"


def data_subject_request_list(
    *, tenant: Tenant, status: str | None = None, kind: str | None = None, search: str = ""
) -> QuerySet[DataSubjectRequest]:
    """The tenant's requests, the nearest deadline first (an extension counts), narrowed by status, kind and a
    search of the external id, the subject's display name and the requester."""
    requests = DataSubjectRequest.objects.filter(tenant=tenant).select_related("end_user", "erasure_receipt")
    if status:
        requests = requests.filter(status=status)
    if kind:
        requests = requests.filter(kind=kind)
    if search := search.strip():
        requests = requests.filter(
            Q(external_id__icontains=search)
            | Q(end_user__display_name__icontains=search)
            | Q(requester__icontains=search)
        )
    return requests.annotate(deadline_at=Coalesce("extended_due_at", "due_at")).order_by("deadline_at", "pk")


def data_subject_request_get(*, tenant: Tenant, id: int) -> DataSubjectRequest:
    """One request of `tenant`; raises DataSubjectRequest.DoesNotExist (another tenant's id too)."""
    return DataSubjectRequest.objects.select_related("end_user", "erasure_receipt", "tenant").get(tenant=tenant, pk=id)


def data_subject_request_timeline(request: DataSubjectRequest) -> QuerySet[AuditEntry]:
    """Every audited step of the request, oldest first: its own steps and those of what fulfilled it (the export,
    the erasure, the linked forgets, edits and pauses)."""
    steps = Q(target_type=TARGET, target_id=request.pk) | Q(pk__in=request.fulfilled_by_entries)
    if request.export_job_id:
        steps |= Q(target_type="export_job", target_id=request.export_job_id, action="gdpr.export")
    if request.erasure_receipt_id:
        steps |= Q(target_type="erasure_receipt", target_id=request.erasure_receipt_id)
    return AuditEntry.objects.filter(steps, tenant_id=request.tenant_id).order_by("seq")


def end_user_search(*, tenant: Tenant, search: str) -> QuerySet[EndUser]:
    """The tenant's end users whose external id or display name contains `search` (empty: none), by external id."""
    search = search.strip()
    if not search:
        return EndUser.objects.none()
    found = Q(external_id__icontains=search) | Q(display_name__icontains=search)
    return EndUser.objects.filter(found, tenant=tenant).order_by("external_id")


def erasure_receipts_of(*, tenant: Tenant, external_id: str) -> QuerySet[ErasureReceipt]:
    """The erasure receipts of the subject with this exact external id (receipts hold only its hash), newest first."""
    ref = subject_reference_of(tenant_id=tenant.pk, external_id=external_id.strip())
    return ErasureReceipt.objects.filter(tenant=tenant, subject_ref=ref).order_by("-created_at", "-id")
