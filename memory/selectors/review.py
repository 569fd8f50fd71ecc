"""Reads for the review queue and the personal-data screens: pending long-term memory with its source turns, the
profile text a rejected fact would withdraw, scans."""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Prefetch, QuerySet

from memory.models import KnowledgeEntry, Page, PersonalDataScan, ProfileVersion, ReviewState, Tenant
from memory.profile_withdrawal import ProfileWithdrawal, profile_without

SOURCE_PAGES = Prefetch(
    "source_pages", queryset=Page.objects.without_vectors().select_related("space__assistant").order_by("seq")
)


_Rows = TypeVar("_Rows", bound=QuerySet)  # a queryset keeps its class (VectorQuerySet) when narrowed


def _of_user(items: _Rows, user_external_id: str | None) -> _Rows:
    return items if user_external_id is None else items.filter(end_user__external_id=user_external_id)


def pending_knowledge_list(*, tenant: Tenant, user_external_id: str | None = None) -> QuerySet[KnowledgeEntry]:
    """The tenant's (or one of its users') facts awaiting review, oldest first, with their owner and source turns
    (three queries)."""
    return (
        _of_user(
            KnowledgeEntry.objects.filter(end_user__tenant=tenant, review_state=ReviewState.PENDING), user_external_id
        )
        .select_related("end_user", "assistant")
        .prefetch_related(SOURCE_PAGES)
        .without_vectors()
        .order_by("created_at", "id")
    )


def pending_profile_version_list(*, tenant: Tenant, user_external_id: str | None = None) -> QuerySet[ProfileVersion]:
    """The tenant's (or one of its users') profile versions awaiting review, oldest first, with their owner and
    source turns."""
    return (
        _of_user(
            ProfileVersion.objects.filter(end_user__tenant=tenant, review_state=ReviewState.PENDING), user_external_id
        )
        .select_related("end_user")
        .prefetch_related(SOURCE_PAGES)
        .order_by("created_at", "id")
    )


def personal_data_scan_list(*, tenant: Tenant) -> QuerySet[PersonalDataScan]:
    """The tenant's re-scans, newest first."""
    return PersonalDataScan.objects.filter(tenant=tenant).order_by("-created_at", "-id")


def personal_data_scan_get(*, tenant: Tenant, id: int) -> PersonalDataScan:
    """One of the tenant's re-scans; raises PersonalDataScan.DoesNotExist."""
    return PersonalDataScan.objects.get(tenant=tenant, id=id)


def approved_profiles_of(*, end_user_ids: list[int]) -> dict[int, ProfileVersion]:
    """Each user's current profile (their newest approved version), by end user id; one query. The review queue
    shows a pending version against it."""
    current = (
        ProfileVersion.objects.filter(end_user_id__in=end_user_ids, review_state=ReviewState.APPROVED)
        .order_by("end_user_id", "-number")
        .distinct("end_user_id")
    )
    return {version.end_user_id: version for version in current}


def _profiles_in_use(end_user_id: int) -> list[ProfileVersion]:
    """The user's versions awaiting review and the current approved one (the newest), newest first."""
    states = (ReviewState.PENDING, ReviewState.APPROVED)
    versions = list(ProfileVersion.objects.filter(end_user_id=end_user_id, review_state__in=states).order_by("-number"))
    current = next((v for v in versions if v.review_state == ReviewState.APPROVED), None)
    return [v for v in versions if v.review_state == ReviewState.PENDING or v is current]


def profile_withdrawals(*, end_user_id: int, facts: list[str]) -> list[tuple[ProfileVersion, ProfileWithdrawal]]:
    """Each pending or current profile version of the user that states one of `facts`, with its text without them.
    Read-only (the rejection's preview)."""
    found = []
    for version in _profiles_in_use(end_user_id):
        withdrawal = profile_without(version.text, facts)
        if withdrawal.changed or withdrawal.needs_rederiving:
            found.append((version, withdrawal))
    return found
