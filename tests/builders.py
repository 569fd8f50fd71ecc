"""State builders for tests: small functions that build memory through our services, with sensible defaults.

Where no service builds what a test needs (a segment with chosen heat, a page placed in a chosen segment, a fact or
a profile version with chosen text), the builder writes the memory rows directly: here, and nowhere else in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db.models import F
from django.utils import timezone

from memory.models import (
    Assistant,
    ChatReply,
    EndUser,
    IdempotentRequest,
    KnowledgeEntry,
    MemoryEvent,
    MemorySpace,
    Page,
    PersonalDataPolicy,
    ProfileVersion,
    Segment,
    Tenant,
)
from memory.models.tiers import HeatEvent, KnowledgeKind, ReplySource, Tier
from memory.services.audit import Actor
from memory.services.embedding_state import embedder_for_store
from memory.services.events import event_record
from memory.services.governance import memory_pause_set
from memory.services.heat_samples import heat_sample_record
from memory.services.idempotency import idempotent_request_claim, idempotent_request_complete
from memory.services.personal_data import personal_data_policy_update
from memory.services.promotion import segment_promote, text_hash
from memory.services.replies import chat_reply_claim, chat_reply_complete
from memory.services.tenancy import end_user_create, tenant_create
from memory.services.turns import TurnRecorded, space_get_or_create, turn_record
from memory.steps.types import Usage

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # the time every builder starts from unless told otherwise
MINUTE = timedelta(minutes=1)
HOT = 9  # L_interaction that makes a segment hot enough to promote (τ = 5)

# Four topics of three turns each, as a user would talk about them; the console tests record them for real.
TOPICS = [
    [
        ("I am planning a trip to Lisbon in May and I love walking through old towns.", "Lisbon suits walkers."),
        ("I am vegetarian, so I need restaurants in Lisbon with vegetarian food.", "Lisbon has vegetarian places."),
        ("I want to visit the Alfama district in Lisbon and ride the old tram.", "Tram 28 crosses Alfama."),
    ],
    [
        ("I started baking sourdough bread and my starter is called Bubbles.", "Sourdough takes patience."),
        ("My sourdough bread came out flat, the starter Bubbles seems weak.", "Feed the starter twice daily."),
        ("I bake sourdough bread every Sunday morning for my family.", "Sunday baking sounds lovely."),
    ],
    [
        ("I signed up for a half marathon in October and I run three times a week.", "Build mileage slowly."),
        ("My left knee aches after long runs when I train for the marathon.", "Rest the knee, add strength work."),
        ("I run with my neighbour Tom on Saturday mornings along the river.", "Running partners help."),
    ],
    [
        ("I grow tomatoes and courgettes in raised beds in my back garden.", "Raised beds drain well."),
        ("My dog Biscuit digs up the garden beds and eats the courgettes.", "Netting keeps dogs out."),
        ("I built a fence around the tomato beds to keep Biscuit out of the garden.", "A fence should work."),
    ],
]


# A page keeps its vectors in half precision (memory.models.tiers.HalfVectorField): each coordinate of a unit vector
# comes back within 2^-11 of its size, well inside this.
HALF_PRECISION = 1e-3


def same_page_vector(stored, expected) -> bool:
    """Whether a page vector as stored (half precision) is `expected`, to within half precision's rounding."""
    return bool(np.allclose(np.asarray(stored, dtype=np.float32), expected, rtol=0, atol=HALF_PRECISION))


def _vector(text: str) -> np.ndarray:
    """The vector the store's embedder (the test seam's fake, usually) gives `text`."""
    return embedder_for_store().embed([text])[0]


# --- People and spaces -----------------------------------------------------------------------------------------


def end_user(*, tenant: str = "acme", external_id: str = "ann", **details: str) -> EndUser:
    """An end user of the tenant `tenant` (created with its assistant `ava` if missing), through the services.

    `details` go to `end_user_create`: display_name, email, username, password.
    """
    return end_user_create(tenant=tenant_create(slug=tenant), external_id=external_id, **details)


def end_users(tenant: Tenant, *, count: int, prefix: str = "u") -> list[EndUser]:
    """`count` end users of `tenant` without a login, `<prefix>000`, `<prefix>001`, ..., through the service."""
    return [end_user_create(tenant=tenant, external_id=f"{prefix}{i:03}") for i in range(count)]


def crowd(tenant: Tenant, assistant: Assistant, *, users: int) -> None:
    """`users` active end users, every tenth with a memory space of three segments and seven short-term pages.

    Bulk-written in four inserts: scale tests need the rows, and through the services they would take minutes.
    """
    now = timezone.now()
    people = EndUser.objects.bulk_create(
        EndUser(tenant=tenant, external_id=f"user-{i:05}", display_name=f"User {i}", last_active_at=now)
        for i in range(users)
    )
    spaces = MemorySpace.objects.bulk_create(
        MemorySpace(tenant=tenant, end_user=person, assistant=assistant) for person in people[::10]
    )
    Segment.objects.bulk_create(
        Segment(space=space, summary="topic", n_visit=n % 7, l_interaction=n % 5, last_touched_at=now)
        for n, space in enumerate(spaces)
        for _ in range(3)
    )
    Page.objects.bulk_create(
        Page(space=space, seq=seq, user_message="hello", assistant_reply="hi", at=now)
        for space in spaces
        for seq in range(1, 8)
    )


def space_of(end_user: EndUser, assistant: Assistant | None = None) -> MemorySpace:
    """The memory space of the pair; the assistant defaults to the end user's tenant's `ava`."""
    assistant = assistant or end_user.tenant.assistants.get(external_id="ava")
    return space_get_or_create(end_user=end_user, assistant=assistant)


# --- Short-term memory: turns through the real turn service ----------------------------------------------------


def turn(
    space: MemorySpace,
    *,
    user_message: str = "Hello.",
    assistant_reply: str = "Noted.",
    at: datetime | None = None,
    **source: str | dict,
) -> TurnRecorded:
    """One turn recorded with `turn_record` (pages past STM capacity go to updating after commit).

    `source` goes to `turn_record`: source, source_ref, source_meta.
    """
    return turn_record(
        end_user=space.end_user,
        assistant=space.assistant,
        user_message=user_message,
        assistant_reply=assistant_reply,
        at=at,
        **source,
    )


def turns(
    space: MemorySpace, *, messages: Sequence[str], start: datetime = T0, step: timedelta = MINUTE
) -> list[TurnRecorded]:
    """One turn per message (replies "Noted."), `step` apart from `start`."""
    return [turn(space, user_message=message, at=start + i * step) for i, message in enumerate(messages)]


# --- Mid-term memory: segments and placed pages, written as updating would leave them --------------------------


def segment(
    space: MemorySpace,
    *,
    summary: str = "A topic",
    keywords: list[str] | None = None,
    n_visit: int = 0,
    l_interaction: int = 0,
    last_touched_at: datetime = T0,
    pinned: bool = False,
    locked: bool = False,
    heat_sampled: bool = False,
) -> Segment:
    """A segment with chosen heat counters and flags, embedded from its summary; keywords default to its words.

    Written directly: updating chooses segments itself, so no service makes one with chosen heat. With
    `heat_sampled`, its first heat sample is recorded as updating records it for a new segment.
    """
    created = Segment.objects.create(
        space=space,
        summary=summary,
        keywords=summary.lower().split()[:8] if keywords is None else keywords,
        embedding=_vector(summary),
        n_visit=n_visit,
        l_interaction=l_interaction,
        last_touched_at=last_touched_at,
        pinned=pinned,
        locked=locked,
    )
    if heat_sampled:
        heat_sample_record(segment=created, event=HeatEvent.CREATED, now=last_touched_at)
    return created


def page(
    space: MemorySpace,
    *,
    user_message: str = "Hello.",
    assistant_reply: str = "Noted.",
    at: datetime | None = None,
    segment: Segment | None = None,
    chain_summary: str = "",
    topic_summary: str = "",
    reply_source: str = ReplySource.ASSISTANT,
) -> Page:
    """A page: a short-term turn through `turn_record`, or, given `segment`, a mid-term page placed in it.

    A placed page takes the space's next sequence number and is embedded from its message; only placed pages
    carry chain and topic summaries. `reply_source` SYSTEM makes the reply system text (an offline reply).
    """
    if segment is None:
        assert not (chain_summary or topic_summary), "a short-term page has no summaries yet"
        recorded = turn(
            space, user_message=user_message, assistant_reply=assistant_reply, at=at, reply_source=reply_source
        )
        return recorded.page
    seq = MemorySpace.objects.get(pk=space.pk).next_seq
    placed = Page.objects.create(
        space=space,
        seq=seq,
        user_message=user_message,
        assistant_reply=assistant_reply,
        at=at or T0,
        tier=Tier.MID_TERM,
        segment=segment,
        embedding=_vector(user_message),
        chain_summary=chain_summary,
        topic_summary=topic_summary,
        reply_source=reply_source,
    )
    MemorySpace.objects.filter(pk=space.pk).update(next_seq=F("next_seq") + 1)
    return placed


def segment_with_pages(
    space: MemorySpace,
    *,
    summary: str = "A topic",
    messages: Sequence[str | tuple[str, str]] = ("Hello.",),
    at: datetime = T0,
    chain_summary: str | None = None,
    **segment_fields,
) -> Segment:
    """A segment about `summary` holding one placed page per message, a minute apart from `at`.

    A message is the user's text (the reply is "Noted.") or a (message, reply) pair. L_interaction counts the pages
    unless given; the chain summary defaults to "The user talked about <summary>.".
    """
    segment_fields.setdefault("l_interaction", len(messages))
    segment_fields.setdefault("last_touched_at", at)
    created = segment(space, summary=summary, **segment_fields)
    chain = f"The user talked about {summary}." if chain_summary is None else chain_summary
    for offset, message in enumerate(messages):
        user_message, reply = (message, "Noted.") if isinstance(message, str) else message
        page(
            space,
            user_message=user_message,
            assistant_reply=reply,
            at=at + offset * MINUTE,
            segment=created,
            chain_summary=chain,
        )
    return created


def pause(space: MemorySpace) -> None:
    """Pause the space's memory as its end user would, through the governance service (audited)."""
    memory_pause_set(space=space, paused=True, actor=Actor.end_user(space.end_user), reason="the test pauses memory")


def segment_lock(segment: Segment, *, summary: str) -> None:
    """Lock a segment under an operator's summary, keeping its vector so that pages on its topic still join it."""
    Segment.objects.filter(pk=segment.pk).update(locked=True, summary=summary)


def heat_set(segment: Segment, **counters: int) -> None:
    """Set a segment's heat counters (n_visit, l_interaction) as visits and interactions would have."""
    Segment.objects.filter(pk=segment.pk).update(**counters)


def flags_set(item: Page | Segment | KnowledgeEntry | ProfileVersion, **flags: bool) -> None:
    """Set pinned or locked on a memory item without the audited governance service (the test's arrangement)."""
    type(item).objects.filter(pk=item.pk).update(**flags)


# --- Long-term personal memory: knowledge and profile ----------------------------------------------------------


def knowledge(
    end_user: EndUser,
    *,
    text: str = "The user likes tea",
    assistant: Assistant | None = None,
    pinned: bool = False,
    locked: bool = False,
    embedded: bool = True,
    source_segment: Segment | None = None,
    source_pages: Sequence[Page] = (),
) -> KnowledgeEntry:
    """A knowledge entry: about the user, or, with `assistant`, about what that assistant did for them.

    Written directly: promotion decides its facts itself. `embedded=False` leaves it without a vector, as a fact
    from before embedding would be.
    """
    entry = KnowledgeEntry.objects.create(
        end_user=end_user,
        assistant=assistant,
        kind=KnowledgeKind.ASSISTANT if assistant else KnowledgeKind.USER,
        text=text,
        text_hash=text_hash(text),
        embedding=_vector(text) if embedded else None,
        source_segment=source_segment,
        pinned=pinned,
        locked=locked,
    )
    entry.source_pages.add(*source_pages)
    return entry


def profile(end_user: EndUser, *, text: str = "The user likes tea.", locked: bool = False) -> ProfileVersion:
    """The next profile version, written by the system (as promotion writes one); an operator's goes through
    `profile_edit`."""
    current = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()
    number = current.number + 1 if current else 1
    return ProfileVersion.objects.create(end_user=end_user, number=number, text=text, locked=locked)


# --- The real pipeline: recorded, placed and promoted ----------------------------------------------------------


def segments_promote(space: MemorySpace) -> None:
    """Make every segment of the space hot, then promote it (profile and knowledge from its pages)."""
    for each in Segment.objects.filter(space=space).order_by("id"):
        heat_set(each, l_interaction=HOT)
        segment_promote(segment_id=each.pk)


def conversations(
    end_user: EndUser,
    assistant: Assistant,
    *,
    capture: Callable,
    rounds: int = 1,
    place: bool = True,
    promote: bool = True,
    start: datetime = T0,
) -> MemorySpace:
    """Record `rounds` passes over TOPICS as turns 3 minutes apart, place them into segments, then promote.

    `capture` is pytest-django's django_capture_on_commit_callbacks, so the updating tasks run as they would after
    a real commit; with `place=False` they never run, and the pages that left STM stay pending.
    """
    space = space_of(end_user, assistant)
    said = [said for _ in range(rounds) for topic in TOPICS for said in topic]
    with capture(execute=place):
        for i, (message, reply) in enumerate(said):
            turn(space, user_message=message, assistant_reply=reply, at=start + 3 * i * MINUTE)
    if promote:
        segments_promote(space)
    return space


# --- Around memory: replies, events, idempotent requests -------------------------------------------------------


def reply(
    space: MemorySpace,
    *,
    user_message: str = "Hello.",
    idempotency_key: str = "k1",
    page: Page | None = None,
    usage: Usage | None = None,
) -> ChatReply:
    """A chat reply claimed by its key; with `page`, completed with that page and what it cost."""
    claimed, _ = chat_reply_claim(space=space, idempotency_key=idempotency_key, user_message=user_message)
    if page is not None:
        usage = usage or Usage()
        mode = "llm" if usage.calls else "offline"
        chat_reply_complete(reply=claimed, page=page, mode=mode, memory_used={}, dropped=[], usage=usage)
    return claimed


def event(space: MemorySpace, *, kind: str, detail: dict | None = None, usage: Usage | None = None) -> MemoryEvent:
    """One memory event of `kind`, as updating or promotion records it."""
    return event_record(space=space, kind=kind, detail=detail, usage=usage)


def idempotent_request(
    end_user: EndUser, *, key: str = "k", endpoint: str = "turns", response: dict | None = None
) -> IdempotentRequest:
    """An API request claimed by its key and answered for `end_user`, its answer stored for replay."""
    claim = idempotent_request_claim(tenant=end_user.tenant, endpoint=endpoint, key=key, fingerprint="h")
    idempotent_request_complete(request=claim.request, status_code=201, response=response or {}, end_user=end_user)
    return claim.request


# --- Retention: rows of a chosen age ------------------------------------------------------------------------------


def backdate(item, **times: datetime) -> None:
    """Set the time fields of a row (created_at, at, last_active_at) that the services stamp with the clock."""
    type(item).objects.filter(pk=item.pk).update(**times)
    for name, value in times.items():
        setattr(item, name, value)


# --- Personal data: a tenant's policy, written through its service ---------------------------------------------


def personal_data_policy(tenant: Tenant, **values) -> PersonalDataPolicy:
    """Set the tenant's personal-data policy (`email="do_not_store"`, `review_mode="review_all"`, ...)."""
    return personal_data_policy_update(tenant=tenant, actor=Actor.system("test"), reason="test policy", **values)


# --- Long turns ------------------------------------------------------------------------------------------------

_PROSE = (
    "configure the build cache so that each stage reuses the compiled layers from the previous run",
    "the parser reads every token once and keeps a small stack of open brackets",
    "write the migration first then backfill the rows in batches of a thousand",
    "rename the helper to say what it returns and drop the flag nobody passes",
    "the scheduler wakes every minute and claims the jobs whose lease has expired",
    "keep the retry budget small because a timeout usually means the upstream is overloaded",
)
_CODE = (
    "```python\ndef batch(rows, size=1000):\n    for start in range(0, len(rows), size):\n"
    "        yield rows[start : start + size]\n```",
    "```sql\nUPDATE orders SET state = 'shipped'\nWHERE id = ANY(%(ids)s) AND state = 'packed';\n```",
    "```bash\nmake test && git push origin main\n```",
)


def long_reply(*, chars: int = 50_000, ending: str = "") -> str:
    """A coding assistant's long answer: numbered steps of prose and code blocks, `chars` characters long, with
    `ending` as its last paragraph but one (a sentence no other part of it shares words with)."""
    parts, step = [], 0
    tail = f"\n\n{ending}\n\nThat is everything; run the steps in order." if ending else ""
    while sum(len(p) + 2 for p in parts) < chars - len(tail):
        step += 1
        sentences = ". ".join(_PROSE[(step + i) % len(_PROSE)].capitalize() for i in range(3))
        parts.append(f"Step {step}. {sentences}.")
        if step % 2 == 0:
            parts.append(_CODE[step % len(_CODE)])
    text = "\n\n".join(parts)[: chars - len(tail)]
    return text + tail


def stm_push_out(space: MemorySpace, capture, *, prefix: str = "Thanks, noted") -> None:
    """As many short turns as STM holds, so every earlier page leaves it and is placed (embedded) at once; `capture`
    is pytest-django's django_capture_on_commit_callbacks, which runs the placement queued after commit."""
    from django.conf import settings

    with capture(execute=True):
        for number in range(settings.MEMORY_STM_CAPACITY):
            turn(space, user_message=f"{prefix} {number}.")


def stm_push_out_now(space: MemorySpace, *, prefix: str = "Thanks, noted") -> None:
    """`stm_push_out` in a test whose transactions commit (transactional_db, browser tests): each turn commits and
    its placement runs then."""
    from django.conf import settings

    for number in range(settings.MEMORY_STM_CAPACITY):
        turn(space, user_message=f"{prefix} {number}.")
