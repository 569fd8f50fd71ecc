"""Reads of segment heat for promotion: which segments are hot and still hold pages not yet analysed.

Heat itself is computed by memory.heat (pure functions of the counters and `now`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Exists, OuterRef

from memory.heat import heat_of, is_hot
from memory.models import Page, Segment


def hot_segment_ids(*, space_id: int, now: datetime, segment_ids: Iterable[int] | None = None) -> list[int]:
    """Every segment with heat ≥ τ that holds pages not yet analysed (all of them, not only the hottest).

    With `segment_ids`, only those segments are looked at (the ones whose heat just grew): one indexed statement
    whatever the size of the space.
    """
    unanalysed = Page.objects.filter(segment=OuterRef("pk"), analysed=False)
    segments = Segment.objects.filter(space_id=space_id)
    if segment_ids is not None:
        ids = sorted(set(segment_ids))
        if not ids:
            return []
        segments = segments.filter(id__in=ids)
    rows = segments.filter(Exists(unanalysed)).values("id", "n_visit", "l_interaction", "last_touched_at")
    hot = []
    for row in rows:
        heat = heat_of(
            n_visit=row["n_visit"], l_interaction=row["l_interaction"], last_touched_at=row["last_touched_at"], now=now
        )
        if is_hot(heat):
            hot.append(row["id"])
    return sorted(hot)
