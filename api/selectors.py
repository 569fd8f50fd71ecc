"""Reads for the API, always within one tenant: another tenant's id is simply not found (404, never 403).

Each `*_of` returns one object of `tenant` or raises NotFound; each `*_list` returns a queryset for a list view,
with the joins its serializer needs.
"""

from __future__ import annotations

from django.db.models import Count, QuerySet
from rest_framework.exceptions import NotFound

from memory.models import (
    Assistant,
    AuditEntry,
    EndUser,
    ErasureReceipt,
    ExportJob,
    HeatSample,
    KnowledgeEntry,
    Page,
    ProfileVersion,
    Segment,
    Tenant,
)


def _one(queryset: QuerySet, what: str):
    found = queryset.first()
    if found is None:
        raise NotFound(f"No such {what}.")
    return found


def end_user_of(tenant: Tenant, external_id: str) -> EndUser:
    return _one(EndUser.objects.filter(tenant=tenant, external_id=external_id), "user")


def assistant_of(tenant: Tenant, external_id: str) -> Assistant:
    return _one(Assistant.objects.filter(tenant=tenant, external_id=external_id), "assistant")


def end_user_exists(tenant: Tenant, external_id: str) -> bool:
    return EndUser.objects.filter(tenant=tenant, external_id=external_id).exists()


def assistant_exists(tenant: Tenant, external_id: str) -> bool:
    return Assistant.objects.filter(tenant=tenant, external_id=external_id).exists()


def end_user_list(tenant: Tenant, *, active: bool | None = None) -> QuerySet[EndUser]:
    users = EndUser.objects.filter(tenant=tenant).order_by("external_id")
    return users if active is None else users.filter(is_active=active)


def assistant_list(tenant: Tenant, *, active: bool | None = None) -> QuerySet[Assistant]:
    assistants = Assistant.objects.filter(tenant=tenant).order_by("external_id")
    return assistants if active is None else assistants.filter(is_active=active)


# --- Memory items ---------------------------------------------------------------------------------------------


def page_list(tenant: Tenant, *, filters: dict) -> QuerySet[Page]:
    pages = Page.objects.filter(space__tenant=tenant).select_related("space__end_user", "space__assistant")
    pages = pages.without_vectors()
    lookups = {
        "user": "space__end_user__external_id",
        "assistant": "space__assistant__external_id",
        "tier": "tier",
        "segment": "segment_id",
        "pinned": "pinned",
    }
    return pages.filter(**{lookups[k]: v for k, v in filters.items() if k in lookups}).order_by("-at", "-id")


def page_of(tenant: Tenant, page_id: int) -> Page:
    return _one(page_list(tenant, filters={}).filter(pk=page_id), "page")


def segment_list(tenant: Tenant, *, filters: dict) -> QuerySet[Segment]:
    segments = (
        Segment.objects.filter(space__tenant=tenant)
        .select_related("space__end_user", "space__assistant")
        .annotate(page_count=Count("pages"))
        .without_vectors()
    )
    lookups = {"user": "space__end_user__external_id", "assistant": "space__assistant__external_id"}
    lookups |= {"pinned": "pinned", "locked": "locked"}
    return segments.filter(**{lookups[k]: v for k, v in filters.items() if k in lookups}).order_by("-updated_at", "-id")


def segment_of(tenant: Tenant, segment_id: int) -> Segment:
    return _one(segment_list(tenant, filters={}).filter(pk=segment_id), "segment")


def heat_history(segment: Segment) -> QuerySet[HeatSample]:
    return HeatSample.objects.filter(segment=segment).order_by("at", "id")


def knowledge_list(tenant: Tenant, *, filters: dict) -> QuerySet[KnowledgeEntry]:
    entries = (
        KnowledgeEntry.objects.filter(end_user__tenant=tenant)
        .select_related("end_user", "assistant")
        .prefetch_related("source_pages")
        .without_vectors()
    )
    lookups = {"user": "end_user__external_id", "assistant": "assistant__external_id", "kind": "kind"}
    lookups |= {"pinned": "pinned", "locked": "locked"}
    return entries.filter(**{lookups[k]: v for k, v in filters.items() if k in lookups}).order_by("-created_at", "-id")


def knowledge_of(tenant: Tenant, entry_id: int) -> KnowledgeEntry:
    return _one(knowledge_list(tenant, filters={}).filter(pk=entry_id), "knowledge entry")


def profile_version_list(tenant: Tenant, *, filters: dict) -> QuerySet[ProfileVersion]:
    versions = ProfileVersion.objects.filter(end_user__tenant=tenant).select_related("end_user")
    if "user" in filters:
        versions = versions.filter(end_user__external_id=filters["user"])
    return versions.order_by("end_user_id", "-number")


def profile_version_of(tenant: Tenant, version_id: int) -> ProfileVersion:
    return _one(profile_version_list(tenant, filters={}).filter(pk=version_id), "profile version")


def profile_current(end_user: EndUser) -> ProfileVersion | None:
    return ProfileVersion.objects.filter(end_user=end_user).select_related("end_user").order_by("-number").first()


# --- Governance -----------------------------------------------------------------------------------------------


def audit_list(tenant: Tenant, *, filters: dict) -> QuerySet[AuditEntry]:
    entries = AuditEntry.objects.filter(tenant=tenant).select_related("end_user").order_by("-seq")
    lookups = {
        "user": "end_user__external_id",
        "subject_id": "subject_id",
        "action": "action",
        "actor_kind": "actor_kind",
        "target_type": "target_type",
        "target_id": "target_id",
        "since": "created_at__gte",
        "until": "created_at__lt",
    }
    return entries.filter(**{lookups[k]: v for k, v in filters.items() if k in lookups})


def erasure_receipt_list(tenant: Tenant) -> QuerySet[ErasureReceipt]:
    return ErasureReceipt.objects.filter(tenant=tenant).select_related("tenant").order_by("-created_at", "-id")


def erasure_receipt_of(tenant: Tenant, receipt_id: int) -> ErasureReceipt:
    return _one(erasure_receipt_list(tenant).filter(pk=receipt_id), "erasure receipt")


def export_job_of(tenant: Tenant, job_id: int) -> ExportJob:
    return _one(ExportJob.objects.filter(tenant=tenant, pk=job_id).select_related("end_user"), "export")


def export_job_latest(end_user: EndUser) -> ExportJob | None:
    return ExportJob.objects.filter(end_user=end_user).select_related("end_user").order_by("-created_at", "-id").first()
