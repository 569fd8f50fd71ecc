"""Reads of escalations: a tenant's queue, oldest first, and one escalation with the item it names."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min, Model, QuerySet

from memory.models import Escalation, EscalationState, KnowledgeEntry, Page, ProfileVersion, Segment, Tenant

TARGET_MODELS = {model.item_kind: model for model in (Page, Segment, KnowledgeEntry, ProfileVersion)}


def escalation_list(*, tenant: Tenant, state: str | None = EscalationState.OPEN) -> QuerySet[Escalation]:
    """The tenant's escalations in `state` (None: all), oldest first, with their owner and who flagged and settled
    them."""
    escalations = Escalation.objects.filter(tenant=tenant)
    if state is not None:
        escalations = escalations.filter(state=state)
    return escalations.select_related("end_user", "flagged_by", "resolved_by").order_by("created_at", "pk")


@dataclass(frozen=True)
class EscalationCounts:
    """What waits in a tenant's queue: how many open escalations, and when the oldest was flagged."""

    open: int
    oldest_at: datetime | None


def escalation_counts(*, tenant: Tenant) -> EscalationCounts:
    """The tenant's open escalations counted, with the oldest one's date, in one query (the queue's index)."""
    row = Escalation.objects.filter(tenant=tenant, state=EscalationState.OPEN).aggregate(
        open=Count("pk"), oldest_at=Min("created_at")
    )
    return EscalationCounts(**row)


def escalation_get(*, tenant: Tenant, id: int) -> Escalation:
    """One escalation of `tenant`; raises Escalation.DoesNotExist (another tenant's id too)."""
    return escalation_list(tenant=tenant, state=None).get(pk=id)


def escalation_targets(escalations: Iterable[Escalation]) -> list[Escalation]:
    """The escalations, each with `target`: the item it names, or None once forgotten. One query per kind named."""
    escalations = list(escalations)
    wanted: dict[str, set[int]] = defaultdict(set)
    for escalation in escalations:
        wanted[escalation.target_type].add(escalation.target_id)
    found: dict[tuple[str, int], Model] = {}
    for kind, ids in wanted.items():
        model = TARGET_MODELS.get(kind)
        if model is not None:
            found |= {(kind, item.pk): item for item in model.objects.filter(pk__in=ids).without_vectors()}
    for escalation in escalations:
        target = found.get((escalation.target_type, escalation.target_id))
        escalation.target = target  # type: ignore[attr-defined]  # not a column: set here for the screens
    return escalations
