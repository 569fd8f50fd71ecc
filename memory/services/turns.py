"""Recording turns into short-term memory, the entry point of every memory update."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory.models import Assistant, EndUser, MemorySpace, Page, PersonalDataAction, PersonalDataPolicy
from memory.models.events import EventKind
from memory.models.tiers import PageSource, ReplySource, Tier
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor, audit_record
from memory.services.end_user_lock import EndUserClosed, end_user_closed_check, end_user_write_lock
from memory.services.events import event_record
from memory.services.legal_hold import legal_hold_for_deletion
from memory.services.personal_data import redactor_for
from memory.timeframes import too_far_ahead

# The write lock and its refusal live in end_user_lock (legal_hold needs them, and this module needs legal_hold);
# callers have always imported them from here.
__all__ = [
    "EndUserClosed",
    "InvalidTurn",
    "TurnRecorded",
    "end_user_closed_check",
    "end_user_write_lock",
    "space_get_or_create",
    "stm_evict_overflow",
    "turn_record",
]


class InvalidTurn(ValueError):
    """The turn cannot be stored as given; the message says why."""


@dataclass(frozen=True)
class TurnRecorded:
    page: Page
    queued_updating: bool
    evicted_page_ids: list[int]


def space_get_or_create(*, end_user: EndUser, assistant: Assistant) -> MemorySpace:
    """The memory space of this (end user, assistant) pair; both must belong to one tenant.

    The space holds the caller's end user and assistant: reading them later costs no query, and cannot fail with
    DoesNotExist once an erasure has deleted the user's row under a chat in progress (the chat then answers as
    the erasure's refusal, EndUserClosed, rather than a 500).
    """
    if end_user.tenant_id != assistant.tenant_id:
        raise InvalidTurn("the end user and the assistant belong to different tenants")
    space, _ = MemorySpace.objects.get_or_create(
        end_user=end_user, assistant=assistant, defaults={"tenant_id": end_user.tenant_id}
    )
    space.end_user, space.assistant = end_user, assistant
    return space


def turn_texts_check(*, user_message: str, assistant_reply: str) -> None:
    """Raise InvalidTurn when either text is empty, longer than MEMORY_MESSAGE_MAX_CHARS or holds a NUL: what
    `turn_record` refuses, for an interface to check before it creates anything (the end user on first use)."""
    _checked_text("user_message", user_message)
    _checked_text("assistant_reply", assistant_reply)


def _checked_text(name: str, text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidTurn(f"{name} is empty")
    if len(text) > settings.MEMORY_MESSAGE_MAX_CHARS:
        raise InvalidTurn(f"{name} is longer than {settings.MEMORY_MESSAGE_MAX_CHARS} characters")
    if "\x00" in text:
        raise InvalidTurn(f"{name} contains a NUL character")
    return text


def turn_record(
    *,
    end_user: EndUser,
    assistant: Assistant,
    user_message: str,
    assistant_reply: str,
    at: datetime | None = None,
    source: str = PageSource.CHAT,
    source_ref: str = "",
    source_meta: dict | None = None,
    reply_source: str = ReplySource.ASSISTANT,
    policy: PersonalDataPolicy | None = None,
    space: MemorySpace | None = None,
) -> TurnRecorded:
    """Append one page to the pair's STM; pages past STM capacity leave it, oldest first.

    Personal data the tenant's policy says not to store is redacted from both texts first. A turn dated more than
    a day ahead of now is refused (InvalidTurn): it would never age out of memory.
    `reply_source` is SYSTEM when the reply is text the system generated without a model (the offline reply):
    the transcript keeps it, memory never uses it. A caller that has read the tenant's personal data `policy` or the
    pair's `space` (the chat) passes them, saving their queries.

    Runs under the end user's write lock and then a lock on the memory space, so concurrent turns of one pair get
    consecutive pages in arrival order, STM never exceeds capacity, and an erasure under way refuses the turn
    (EndUserClosed) rather than racing it. Evicted pages are handed to `pages_place_task` after commit (or
    dropped, with an event, while the user has paused memory). Inside a caller's transaction it takes no savepoint:
    a refusal ends the caller's transaction too.
    """
    if not end_user.is_active:
        raise InvalidTurn("the end user is deactivated")
    if not assistant.is_active:
        raise InvalidTurn("the assistant is deactivated")
    turn_texts_check(user_message=user_message, assistant_reply=assistant_reply)
    if at is not None and timezone.is_naive(at):
        at = timezone.make_aware(at)  # in TIME_ZONE, as the database would have read it
    if at is not None and too_far_ahead(at, now=timezone.now()):
        raise InvalidTurn(f"at is more than a day in the future ({at.isoformat()}); send the time the turn happened")
    policy = policy or personal_data_policy_or_default(tenant=end_user.tenant_id)
    redact = redactor_for(policy, PersonalDataAction.DO_NOT_STORE)  # the do-not-store data never reaches a table
    user_message, assistant_reply = redact(user_message), redact(assistant_reply)
    at = at or timezone.now()
    with transaction.atomic(savepoint=False):  # a refusal inside a caller's transaction fails it: no savepoint
        end_user_write_lock(end_user, last_active_at=timezone.now())
        if space is None or (space.end_user_id, space.assistant_id) != (end_user.pk, assistant.pk):
            space = space_get_or_create(end_user=end_user, assistant=assistant)
        seq = _space_seq_take(space)
        page = Page.objects.create(
            space=space,
            seq=seq,
            user_message=user_message,
            assistant_reply=assistant_reply,
            at=at,
            source=source,
            source_ref=source_ref[:200],
            source_meta=source_meta or {},
            reply_source=reply_source,
        )
        evicted = stm_evict_overflow(space)
    return TurnRecorded(page=page, queued_updating=bool(evicted) and not space.paused, evicted_page_ids=evicted)


# Locks the space's row and takes its next page number, reading whether memory is paused under the lock.
SEQ_TAKE_SQL = "UPDATE memory_memoryspace SET next_seq = next_seq + 1 WHERE id = %s RETURNING next_seq - 1, paused"


def _space_seq_take(space: MemorySpace) -> int:
    """The space's next page number, taken under a lock on the space held to the end of the transaction (concurrent
    turns of one pair get consecutive numbers in arrival order); refreshes `space.paused` as read under the lock."""
    with connection.cursor() as cursor:
        cursor.execute(SEQ_TAKE_SQL, [space.pk])
        row = cursor.fetchone()
    if row is None:
        raise MemorySpace.DoesNotExist("the memory space was deleted while the turn was recorded")
    seq, space.paused = row
    space.next_seq = seq + 1
    return seq


# Moves the pages past STM capacity (the newest stay) to mid-term and counts, when asked, the mid-term pages already
# waiting for placement (the statement sees the table as it was before the move, so the moved ones are not in it).
STM_EVICT_SQL = """
WITH moved AS (
    UPDATE memory_page SET tier = %(mid_term)s
    WHERE id IN (
        SELECT id FROM memory_page WHERE space_id = %(space)s AND tier = %(short_term)s
        ORDER BY seq DESC OFFSET %(capacity)s
    )
    RETURNING id
)
SELECT
    ARRAY(SELECT id FROM moved ORDER BY id),
    CASE WHEN %(count_waiting)s AND EXISTS (SELECT 1 FROM moved) THEN (
        SELECT count(*) FROM memory_page WHERE space_id = %(space)s AND tier = %(mid_term)s AND segment_id IS NULL
    ) ELSE 0 END
"""


def stm_evict_overflow(space: MemorySpace) -> list[int]:
    """Move the pages past STM capacity out of STM (caller holds the space lock); queue their updating.

    While memory is paused they are deleted instead (audited as `page.paused_drop`), unless the end user is under
    legal hold: then they stay in STM, past its capacity, and nothing is learnt from them; the first overflow after
    the hold is released drops them all (still paused) or places them (resumed). Returns the ids that left STM.
    """
    if space.paused:
        stm = Page.objects.filter(space=space, tier=Tier.SHORT_TERM).order_by("-seq").values_list("id", flat=True)
        evicted = sorted(list(stm)[settings.MEMORY_STM_CAPACITY :])
        return _stm_paused_drop(space, evicted) if evicted else []
    # MEMORY_PLACEMENT_BATCH pages wait for placement before one placement (one model call) takes them all; with a
    # batch of 1 every eviction is placed at once, without counting
    batch = settings.MEMORY_PLACEMENT_BATCH
    params: dict[str, int | str | bool] = {"space": space.pk, "short_term": Tier.SHORT_TERM, "mid_term": Tier.MID_TERM}
    params |= {"capacity": settings.MEMORY_STM_CAPACITY, "count_waiting": batch > 1}
    with connection.cursor() as cursor:
        cursor.execute(STM_EVICT_SQL, params)
        evicted, waiting = cursor.fetchone()
    if not evicted:
        return []
    if waiting + len(evicted) < batch:
        return evicted  # the pages wait for company; past a lease the sweep places them anyway (jobs_requeue)
    from memory.tasks import pages_place_task

    newest = evicted[-1]
    transaction.on_commit(lambda: pages_place_task.delay(newest))
    return evicted


def _stm_paused_drop(space: MemorySpace, page_ids: list[int]) -> list[int]:
    """Delete pages that left a paused STM, audited, or keep them all while the end user is under legal hold."""
    if legal_hold_for_deletion(end_user_id=space.end_user_id) is not None:
        event_record(space=space, kind=EventKind.HOLD_KEPT, detail={"paused_pages_kept": page_ids})
        return []
    Page.objects.filter(id__in=page_ids).delete()
    event_record(space=space, kind=EventKind.PAUSED_DROP, detail={"pages": len(page_ids)})
    audit_record(
        tenant=space.tenant_id, actor=Actor.system("stm overflow"), action="page.paused_drop",
        end_user=space.end_user, target_type="page", reason="memory is paused: pages leaving short-term memory",
        detail={"removed_page_ids": page_ids},
    )  # fmt: skip
    return page_ids
