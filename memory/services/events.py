"""Recording what updating did: one MemoryEvent per step, failed steps included."""

from __future__ import annotations

from memory.models import MemoryEvent, MemorySpace
from memory.models.events import EventStatus
from memory.steps.types import Usage


def event_record(
    *,
    space: MemorySpace,
    kind: str,
    status: str = EventStatus.OK,
    mode: str = "",
    target_type: str = "",
    target_id: int | None = None,
    detail: dict | None = None,
    usage: Usage | None = None,
    error: str = "",
) -> MemoryEvent:
    """Append one event for `space`. Never stores memory content in `error` beyond the failure message."""
    usage = usage or Usage()
    return MemoryEvent.objects.create(
        tenant_id=space.tenant_id,
        end_user_id=space.end_user_id,
        space=space,
        kind=kind,
        status=status,
        mode=mode,
        target_type=target_type,
        target_id=target_id,
        detail=detail or {},
        llm_calls=usage.calls,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        error=error[:2000],
    )
