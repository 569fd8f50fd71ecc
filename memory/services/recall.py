"""Reading memory for a query on someone's behalf: retrieval plus the audit entry that says who read it."""

from __future__ import annotations

from memory.models import Assistant, EndUser, MemorySpace
from memory.retrieval.result import RetrievalResult
from memory.retrieval.search import retrieve
from memory.services.audit import Actor
from memory.services.governance import memory_read_record
from memory.services.personal_data import prompt_redactor
from memory.services.turns import end_user_closed_check, space_get_or_create


def memory_retrieve(
    *,
    end_user: EndUser,
    assistant: Assistant,
    query: str,
    record_visits: bool,
    actor: Actor,
    what: str,
    request_id: str = "",
) -> tuple[MemorySpace, RetrievalResult]:
    """What memory holds for `query` (no LLM call), audited as a `memory.read` by `actor` (`what` names the path).

    Segment visits are recorded only when `record_visits` and the user's memory is not paused. Raises
    EndUserClosed when the end user was erased while reading (their rows are gone: a refusal, not a failure).
    """
    try:
        space = space_get_or_create(end_user=end_user, assistant=assistant)
        # the embedder gets the query as the model would: without the tenant's mask-in-prompts data
        query = prompt_redactor(tenant=space.tenant_id)(query)
        result = retrieve(space=space, query=query, record_visits=record_visits and not space.paused)
        memory_read_record(
            actor=actor,
            end_user=end_user,
            what=what,
            target_type="memoryspace",
            target_id=space.pk,
            request_id=request_id,
        )
    except Exception:
        end_user_closed_check(end_user, inactive_ok=True)
        raise
    return space, result
