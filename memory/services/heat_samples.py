"""Heat samples: a segment's heat and its components at one moment, recorded with the event that changed it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connection

from memory.heat import Heat, heat_of, segment_heat
from memory.models import HeatSample, Segment
from memory.models.tiers import HeatEvent

# One statement both counts the visits and returns the counters as updated, so the samples need no second read.
VISITS_SQL = (
    "UPDATE {table} SET n_visit = n_visit + 1, last_touched_at = %s WHERE id = ANY(%s) "
    "RETURNING id, space_id, n_visit, l_interaction"
)


def _sample_fields(*, segment_id: int, space_id: int, heat: Heat, event: str, now: datetime) -> dict[str, Any]:
    """The fields of one heat sample of a segment at `now`."""
    return {
        "segment_id": segment_id,
        "space_id": space_id,
        "at": now,
        "n_visit": heat.n_visit,
        "l_interaction": heat.l_interaction,
        "r_recency": heat.r_recency,
        "heat": heat.value,
        "event": event,
    }


def heat_sample_record(*, segment: Segment, event: str, now: datetime) -> HeatSample:
    """Sample the segment's heat (from its current counters) into its heat history."""
    heat = segment_heat(segment, now)
    fields = _sample_fields(segment_id=segment.pk, space_id=segment.space_id, heat=heat, event=event, now=now)
    return HeatSample.objects.create(**fields)


def segment_visits_record(*, segment_ids: Iterable[int], now: datetime) -> list[int]:
    """Count one visit to each segment at `now` (N_visit += 1, last touched now) and sample its heat.

    Two queries whatever the number of segments. Segments deleted meanwhile are skipped; returns the ids visited,
    ascending. Not idempotent: every call is one more visit.
    """
    ids = sorted(set(segment_ids))
    if not ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(VISITS_SQL.format(table=connection.ops.quote_name(Segment._meta.db_table)), [now, ids])
        rows = sorted(cursor.fetchall())
    HeatSample.objects.bulk_create(_visit_sample(row, now) for row in rows)
    return [row[0] for row in rows]


def _visit_sample(row: tuple[int, int, int, int], now: datetime) -> HeatSample:
    """The unsaved sample of a segment just visited, from its updated (id, space_id, n_visit, l_interaction)."""
    segment_id, space_id, n_visit, l_interaction = row
    heat = heat_of(n_visit=n_visit, l_interaction=l_interaction, last_touched_at=now, now=now)
    fields = _sample_fields(segment_id=segment_id, space_id=space_id, heat=heat, event=HeatEvent.VISITED, now=now)
    return HeatSample(**fields)
