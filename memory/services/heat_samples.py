"""Heat samples: a segment's heat and its components at one moment, recorded with the event that changed it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.heat import Heat, segment_heat
from memory.models import HeatSample, Segment


def sample_fields(*, segment_id: int, space_id: int, heat: Heat, event: str, now: datetime) -> dict[str, Any]:
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
    fields = sample_fields(segment_id=segment.pk, space_id=segment.space_id, heat=heat, event=event, now=now)
    return HeatSample.objects.create(**fields)
