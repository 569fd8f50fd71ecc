"""Reads for the operator console's screens: user search, one user's memory, item details, tenant overview, audit.

Single items and plain lists come from memory.selectors.items, .people and .governance; these compose the screens.
Every read is scoped to a tenant, so an id from another tenant is simply not found. Query counts are fixed per
screen whatever the size of memory (pinned in tests/dashboard/test_query_counts.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import paginator
from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    FloatField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, NullIf, TruncDate

from memory.heat import Heat, heat_sql, segment_heat
from memory.models import (
    ActorKind,
    AuditEntry,
    ChatReply,
    EndUser,
    HeatSample,
    KnowledgeEntry,
    MemoryEvent,
    MemorySpace,
    Page,
    ProfileVersion,
    Segment,
    Tenant,
)
from memory.models.events import EventKind, EventStatus
from memory.models.tiers import KnowledgeKind, Tier
from memory.retrieval.result import RetrievalResult
from memory.retrieval.search import retrieve
from memory.selectors.items import correlated_count, segment_page_count

# --- Users list -------------------------------------------------------------------------------------------------


# ASCII digits only ("²".isdigit() is true but int("²") fails), and short enough for a bigint.
_ID = re.compile(r"[0-9]{1,18}")


def id_from_text(text: str) -> int | None:
    """The row id that a search text spells, or None when it is not one."""
    return int(text) if _ID.fullmatch(text) else None


USER_SORTS = {
    "recent": (F("last_active_at").desc(nulls_last=True), "-id"),
    "heat": (F("hottest_heat").desc(nulls_last=True), "-id"),
    "name": ("display_name", "external_id", "id"),
}


def _matching_users(tenant: Tenant, query: str) -> QuerySet[EndUser]:
    """The tenant's end users whose name, email or external id contain `query`, or whose id it is."""
    users = EndUser.objects.filter(tenant=tenant)
    query = query.strip()
    if query:
        match = Q(display_name__icontains=query) | Q(email__icontains=query) | Q(external_id__icontains=query)
        if (pk := id_from_text(query)) is not None:
            match |= Q(pk=pk)
        users = users.filter(match)
    return users


def _with_figures(users: QuerySet[EndUser], now: datetime) -> QuerySet[EndUser]:
    """Each user's tiers' sizes and hottest heat, as correlated subqueries (one SELECT, run once per row)."""
    hottest = Segment.objects.filter(space__end_user=OuterRef("pk")).annotate(heat=heat_sql(now)).order_by("-heat")
    return users.annotate(
        stm_pages=correlated_count(Page.objects.filter(tier=Tier.SHORT_TERM), "space__end_user"),
        mtm_pages=correlated_count(Page.objects.filter(tier=Tier.MID_TERM), "space__end_user"),
        segments=correlated_count(Segment.objects.all(), "space__end_user"),
        # Counted per kind, as the Overview's "User knowledge" and "Assistant knowledge" tiles count them.
        user_knowledge_count=correlated_count(KnowledgeEntry.objects.filter(kind=KnowledgeKind.USER), "end_user"),
        assistant_knowledge_count=correlated_count(
            KnowledgeEntry.objects.filter(kind=KnowledgeKind.ASSISTANT), "end_user"
        ),
        has_profile=Exists(ProfileVersion.objects.filter(end_user=OuterRef("pk"))),
        hottest_heat=Subquery(hottest.values("heat")[:1], output_field=FloatField()),
    )


def end_users_search(*, tenant: Tenant, query: str = "", sort: str = "recent", now: datetime) -> QuerySet[EndUser]:
    """Every matching end user with its figures (stm_pages, mtm_pages, segments, user_knowledge_count,
    assistant_knowledge_count, has_profile, hottest_heat), in `sort` order. For a page of them use end_users_page,
    which computes figures for that page only.
    """
    return _with_figures(_matching_users(tenant, query), now).order_by(*USER_SORTS.get(sort, USER_SORTS["recent"]))


def end_users_page(
    *, tenant: Tenant, query: str = "", sort: str = "recent", number=1, per_page: int = 25, now: datetime
) -> paginator.Page:
    """One page of the matching end users, each with its figures and last_active_at, in three queries: the count,
    the page's ids, and the page's rows with every figure in one SELECT.

    The ids come first so that the figures' correlated subqueries run for the rows shown and nothing else, whatever
    the planner's row estimates (with one statement, stale statistics after a bulk import made PostgreSQL evaluate
    them for every user). Sorting by heat aggregates the segments in one join, not one subquery per user.
    """
    ordering = USER_SORTS.get(sort, USER_SORTS["recent"])
    matching = ordered = _matching_users(tenant, query)
    if sort == "heat":
        ordered = matching.annotate(hottest_heat=Max(heat_sql(now, "memory_spaces__segments__")))
    pager = paginator.Paginator(ordered.order_by(*ordering).values_list("pk", flat=True), per_page)
    pager.count = matching.count()  # counting needs no heat (count is a cached_property: this sets its value)
    page: paginator.Page[Any] = pager.get_page(number)  # of ids, then of their rows
    rows = _with_figures(EndUser.objects.filter(pk__in=list(page.object_list)), now).order_by(*ordering)
    page.object_list = list(rows)
    return page


# --- One user's memory ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentRow:
    segment: Segment
    heat: Heat
    page_count: int

    @property
    def hot(self) -> bool:
        return self.heat.value >= settings.MEMORY_PROMOTION_THRESHOLD


@dataclass
class LongTermMemory:
    """The user's profile versions (newest first) and knowledge with one assistant, user facts and its own."""

    profile_versions: list[ProfileVersion] = field(default_factory=list)
    user_knowledge: list[KnowledgeEntry] = field(default_factory=list)
    assistant_knowledge: list[KnowledgeEntry] = field(default_factory=list)

    @property
    def profile(self) -> ProfileVersion | None:
        return self.profile_versions[0] if self.profile_versions else None


def memory_spaces(*, end_user: EndUser) -> list[MemorySpace]:
    """The user's memory spaces (one per assistant they talk to), with their assistants."""
    return list(MemorySpace.objects.filter(end_user=end_user).select_related("assistant").order_by("id"))


def space_with(spaces: list[MemorySpace], assistant_external_id: str) -> MemorySpace | None:
    """The space with that assistant, else the first one, else None."""
    chosen = next((s for s in spaces if s.assistant.external_id == assistant_external_id), None)
    return chosen or next(iter(spaces), None)


def short_term_list(*, space: MemorySpace) -> list[Page]:
    """The space's short-term pages, oldest first."""
    return list(Page.objects.filter(space=space, tier=Tier.SHORT_TERM).without_vectors().order_by("seq"))


def pages_pending_count(*, space: MemorySpace) -> int:
    """Pages that left short-term memory and wait to be placed into a segment."""
    return Page.objects.waiting_placement().filter(space=space).count()


def segment_rows(*, space: MemorySpace, now: datetime) -> list[SegmentRow]:
    """The space's segments with their heat and page count, hottest first; one query."""
    segments = Segment.objects.filter(space=space).without_vectors().annotate(page_count=segment_page_count())
    rows = [SegmentRow(segment=s, heat=segment_heat(s, now), page_count=s.page_count) for s in segments]
    return sorted(rows, key=lambda r: (-r.heat.value, r.segment.id))


def long_term_memory(*, end_user: EndUser, space: MemorySpace) -> LongTermMemory:
    """The profile's versions and the knowledge of the user with the space's assistant; two queries."""
    memory = LongTermMemory()
    memory.profile_versions = list(
        ProfileVersion.objects.filter(end_user=end_user).select_related("source_segment").order_by("-number")
    )
    knowledge = (
        KnowledgeEntry.objects.filter(end_user=end_user)
        .filter(Q(kind=KnowledgeKind.USER) | Q(assistant=space.assistant))
        .without_vectors()
        .annotate(source_count=Count("source_pages"))
        .order_by("-created_at", "-id")
    )
    for entry in knowledge:
        (memory.user_knowledge if entry.kind == KnowledgeKind.USER else memory.assistant_knowledge).append(entry)
    return memory


# --- Item details -----------------------------------------------------------------------------------------------


@dataclass
class SegmentDetail:
    segment: Segment
    heat: Heat
    pages: list[Page]
    chains: list[list[Page]]
    samples: list[HeatSample]
    events: list[MemoryEvent]
    knowledge: list[KnowledgeEntry]


def segment_detail(*, segment: Segment, now: datetime) -> SegmentDetail:
    """The segment's pages grouped into dialogue chains, its heat history and events, and knowledge from it."""
    pages = list(Page.objects.filter(segment=segment).without_vectors().select_related("reply").order_by("seq"))
    chains: dict[int, list[Page]] = {}
    for page in pages:
        chains.setdefault(page.chain_head_id or page.id, []).append(page)
    events = MemoryEvent.objects.filter(space_id=segment.space_id, status=EventStatus.OK).filter(
        Q(kind=EventKind.PROMOTION, target_type="segment", target_id=segment.id) | Q(kind=EventKind.EVICTION)
    )
    return SegmentDetail(
        segment=segment,
        heat=segment_heat(segment, now),
        pages=pages,
        chains=list(chains.values()),
        samples=list(HeatSample.objects.filter(segment=segment).order_by("at", "id")),
        events=list(events.filter(created_at__gte=segment.created_at).order_by("created_at")),
        knowledge=list(KnowledgeEntry.objects.filter(source_segment=segment).without_vectors().order_by("id")),
    )


@dataclass
class PageDetail:
    page: Page
    reply: ChatReply | None
    knowledge: list[KnowledgeEntry]
    profile_versions: list[ProfileVersion]

    @property
    def promotion(self) -> str:
        """Whether the page reached long-term memory, in one statement that agrees with what is derived from it."""
        facts, versions = len(self.knowledge), len(self.profile_versions)
        if facts or versions:
            counts = ((facts, "fact"), (versions, "profile version"))
            parts = [f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in counts if n]
            return f"yes: long-term memory holds {' and '.join(parts)} from it"
        if self.page.analysed:
            return "analysed, but nothing in long-term memory comes from it"
        if self.page.tier == Tier.SHORT_TERM:
            return "not yet: the turn is still in short-term memory"
        if self.page.segment_id is None:
            return "not yet: it waits to be placed into a topic"
        return "not yet: its topic is not hot enough to be analysed"


def page_detail(*, page: Page) -> PageDetail:
    """What the page came from (its chat reply, if any) and what was derived from it."""
    return PageDetail(
        page=page,
        reply=getattr(page, "reply", None),
        knowledge=list(page.knowledge.without_vectors().order_by("id")),
        profile_versions=list(page.profile_versions.order_by("number")),
    )


# --- Context preview --------------------------------------------------------------------------------------------


def context_retrieval(*, space: MemorySpace, query: str) -> RetrievalResult:
    """What retrieval finds for `query`, recording no visit: no N_visit, last-touch or heat sample changes."""
    return retrieve(space=space, query=query, record_visits=False)


# --- Tenant overview --------------------------------------------------------------------------------------------


@dataclass
class TenantOverview:
    tiers: dict[str, int]
    days: list[date]
    promotions: list[int]
    evictions: list[int]
    updating_calls: list[int]
    reply_calls: list[int]
    updating_tokens: list[int]
    reply_tokens: list[int]

    @property
    def llm_calls(self) -> int:
        return sum(self.updating_calls) + sum(self.reply_calls)


def _per_day(rows, days: list[date], value: str) -> list[int]:
    by_day = {row["day"]: row[value] or 0 for row in rows}
    return [int(by_day.get(day, 0)) for day in days]


def _tier_counts(tenant: Tenant) -> dict[str, int]:
    pages = dict(
        Page.objects.filter(space__tenant=tenant).values("tier").annotate(n=Count("id")).values_list("tier", "n")
    )
    knowledge = dict(
        KnowledgeEntry.objects.filter(end_user__tenant=tenant)
        .values("kind")
        .annotate(n=Count("id"))
        .values_list("kind", "n")
    )
    profiles = ProfileVersion.objects.filter(end_user__tenant=tenant).values("end_user").distinct()
    return {
        "STM pages": pages.get(Tier.SHORT_TERM, 0),
        "MTM pages": pages.get(Tier.MID_TERM, 0),
        "MTM segments": Segment.objects.filter(space__tenant=tenant).count(),
        "Users with a profile": profiles.count(),
        "User knowledge": knowledge.get(KnowledgeKind.USER, 0),
        "Assistant knowledge": knowledge.get(KnowledgeKind.ASSISTANT, 0),
    }


def _daily(queryset: QuerySet, **sums) -> list[dict]:
    """`queryset` grouped by the day of created_at, with the given aggregates per day."""
    return list(queryset.annotate(day=TruncDate("created_at")).values("day").annotate(**sums).order_by("day"))


def tenant_overview(*, tenant: Tenant, days: int, now: datetime) -> TenantOverview:
    """Counts per tier, promotions and evictions per day, and LLM calls and tokens per day (updating and replies)."""
    day_list = [now.date() - timedelta(days=n) for n in range(days - 1, -1, -1)]
    since = now - timedelta(days=days)
    tokens = Sum(F("prompt_tokens") + F("completion_tokens"))
    events = _daily(
        MemoryEvent.objects.filter(tenant=tenant, created_at__gte=since),
        promotions=Count("id", filter=Q(kind=EventKind.PROMOTION, status=EventStatus.OK)),
        evictions=Count("id", filter=Q(kind=EventKind.EVICTION)),
        calls=Sum("llm_calls"),
        tokens=tokens,
    )
    replies = _daily(
        ChatReply.objects.filter(space__tenant=tenant, created_at__gte=since), calls=Sum("llm_calls"), tokens=tokens
    )
    return TenantOverview(
        tiers=_tier_counts(tenant),
        days=day_list,
        promotions=_per_day(events, day_list, "promotions"),
        evictions=_per_day(events, day_list, "evictions"),
        updating_calls=_per_day(events, day_list, "calls"),
        reply_calls=_per_day(replies, day_list, "calls"),
        updating_tokens=_per_day(events, day_list, "tokens"),
        reply_tokens=_per_day(replies, day_list, "tokens"),
    )


# --- Audit ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditFilter:
    user: str = ""
    actor: str = ""
    action: str = ""
    since: date | None = None
    until: date | None = None
    hide_reads: bool = False


# Entries that record a read of memory, not a change: operators' reads and the memory injected into a reply.
READ_ACTIONS = ("memory.read", "reply.memory_injected")


def _matching_end_users(tenant: Tenant, text: str) -> QuerySet[EndUser]:
    """The tenant's end users that `text` names: external id or email exactly, display name in part, or id."""
    match = Q(external_id__iexact=text) | Q(display_name__icontains=text) | Q(email__iexact=text)
    if (pk := id_from_text(text)) is not None:
        match |= Q(pk=pk)
    return EndUser.objects.filter(tenant=tenant).filter(match)


def audit_entries(*, tenant: Tenant, filters: AuditFilter) -> QuerySet[AuditEntry]:
    """The tenant's audit entries, newest first, narrowed by user (name, external id or id), actor (an operator's
    or token's name, an end user acting themselves, or a kind), action, dates, and without reads if asked.

    Each entry carries `operator_name` (the operator's username, for entries whose label erasure emptied) and
    `end_user_actor` (the name of the end user who acted, where one did and still exists).
    """
    operator = get_user_model().objects.annotate(key=Cast("pk", CharField())).filter(key=OuterRef("actor_id"))
    acting_user = EndUser.objects.annotate(key=Cast("pk", CharField())).filter(tenant=tenant, key=OuterRef("actor_id"))
    acting_name = Coalesce(NullIf("display_name", Value("")), "external_id")
    entries = (
        AuditEntry.objects.filter(tenant=tenant)
        .select_related("end_user")
        .annotate(  # erasure empties actor labels; the operator's own name is not the erased user's data
            operator_name=Case(
                When(actor_kind=ActorKind.OPERATOR, then=Subquery(operator.values("username")[:1])),
                default=Value(""),
            ),
            # an end user acting on their own memory, by name while they exist (an erased one has no row)
            end_user_actor=Case(
                When(
                    actor_kind=ActorKind.END_USER,
                    then=Subquery(acting_user.annotate(name=acting_name).values("name")[:1]),
                ),
                default=Value(""),
            ),
        )
    )
    if filters.user:
        match = Q(subject_id__in=_matching_end_users(tenant, filters.user).values("pk"))
        if (pk := id_from_text(filters.user)) is not None:
            match |= Q(subject_id=pk)
        entries = entries.filter(match)
    if filters.actor:
        acting = _matching_end_users(tenant, filters.actor).annotate(key=Cast("pk", CharField())).values("key")
        entries = entries.filter(
            Q(actor_label__icontains=filters.actor)
            | Q(operator_name__icontains=filters.actor)
            | Q(actor_kind=filters.actor)
            | Q(actor_kind=ActorKind.END_USER, actor_id__in=acting)
        )
    if filters.action:
        entries = entries.filter(action=filters.action)
    if filters.hide_reads:
        entries = entries.exclude(action__in=READ_ACTIONS)
    if filters.since:
        entries = entries.filter(created_at__date__gte=filters.since)
    if filters.until:
        entries = entries.filter(created_at__date__lte=filters.until)
    return entries.order_by("-seq")


@dataclass(frozen=True)
class AuditSummary:
    """Counts over a filtered audit log: reads per actor (one line), and the other entries per action and per actor."""

    reads: list[tuple[str, int]]
    actions: list[tuple[str, int]]
    actors: list[tuple[str, int]]

    @property
    def read_count(self) -> int:
        return sum(count for _, count in self.reads)


def _tallied(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def audit_summary(*, entries: QuerySet[AuditEntry]) -> AuditSummary:
    """Who did what how often in `entries` (from audit_entries), in one aggregate query."""
    actor = Coalesce(
        NullIf("end_user_actor", Value("")),
        NullIf("actor_label", Value("")),
        NullIf("operator_name", Value("")),
        Value("—"),
    )
    rows = entries.order_by().annotate(who=actor).values("who", "action").annotate(count=Count("id"))
    reads: dict[str, int] = {}
    actions: dict[str, int] = {}
    actors: dict[str, int] = {}
    for row in rows:
        if row["action"] in READ_ACTIONS:
            reads[row["who"]] = reads.get(row["who"], 0) + row["count"]
            continue
        actions[row["action"]] = actions.get(row["action"], 0) + row["count"]
        actors[row["who"]] = actors.get(row["who"], 0) + row["count"]
    return AuditSummary(reads=_tallied(reads), actions=_tallied(actions), actors=_tallied(actors))


def audit_actions(*, tenant: Tenant) -> list[str]:
    """The actions that occur in the tenant's audit log, for the filter's choices."""
    return list(AuditEntry.objects.filter(tenant=tenant).order_by("action").values_list("action", flat=True).distinct())


def audit_entry_at(*, tenant: Tenant, seq: int) -> AuditEntry | None:
    return AuditEntry.objects.filter(tenant=tenant, seq=seq).select_related("end_user").first()
