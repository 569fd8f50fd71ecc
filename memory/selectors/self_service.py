"""Reads for end users about their own memory: the chat's history, what a reply used, and "what you remember".

Every function takes the end user (or their memory space) and only ever returns that person's rows, so a caller
that passes the logged-in end user cannot reach anyone else's memory. Single items of one's own memory come from
memory.selectors.items, scoped with its `end_user` and `assistant` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.core import paginator
from django.db.models import Q, QuerySet

from memory.models import Assistant, ChatReply, EndUser, KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.models.tiers import KnowledgeKind
from memory.selectors.items import segment_page_count

# --- Whose chat is this -----------------------------------------------------------------------------------------


def space_find(*, end_user: EndUser, assistant: Assistant) -> MemorySpace | None:
    """The memory space of this pair, or None before their first turn (reading never creates one)."""
    return MemorySpace.objects.filter(end_user=end_user, assistant=assistant).first()


# --- The conversation -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UsedPage:
    at: datetime
    user_message: str


@dataclass
class MemoryUsed:
    """What one reply used, in words: the profile, facts, topics and earlier turns, and how many are gone since."""

    profile: ProfileVersion | None = None
    facts: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    pages: list[UsedPage] = field(default_factory=list)
    recent_turns: int = 0
    forgotten: int = 0
    dropped: int = 0

    @property
    def count(self) -> int:
        return bool(self.profile) + len(self.facts) + len(self.topics) + len(self.pages) + self.recent_turns

    @property
    def summary(self) -> str:
        """In words, e.g. "your profile, 2 facts, 1 topic, 3 earlier turns"."""
        parts = ["your profile"] if self.profile else []
        counted = [(len(self.facts), "fact"), (len(self.topics), "topic"), (len(self.pages), "earlier turn")]
        counted.append((self.recent_turns, "recent turn"))
        parts += [f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in counted if n]
        return ", ".join(parts) or "nothing"


def memory_used_ids(used: dict) -> dict[str, list[int]]:
    """The ids of each kind a reply recorded (ChatReply.memory_used's shape), most relevant first, each once: pages
    and segments (pinned ones included), knowledge, short-term pages and the profile version."""
    knowledge = [k["id"] for key in ("user_knowledge", "assistant_knowledge") for k in used.get(key, [])]
    ids = {
        "pages": [p["id"] for p in used.get("pages", [])] + list(used.get("pinned_page_ids", [])),
        "segments": [s["id"] for s in used.get("segments", [])] + list(used.get("pinned_segment_ids", [])),
        "knowledge": knowledge + list(used.get("pinned_knowledge_ids", [])),
        "short_term": list(used.get("short_term_page_ids", [])),
        "profiles": [used["profile_version_id"]] if used.get("profile_version_id") else [],
    }
    return {kind: list(dict.fromkeys(i for i in values if isinstance(i, int))) for kind, values in ids.items()}


EXPLAINED = ("pages", "segments", "knowledge", "profiles")  # the kinds a reply's explanation names


def memory_used_explained(*, space: MemorySpace, replies: list[ChatReply]) -> dict[int, MemoryUsed]:
    """For each reply (by id), the memory it used as readable items; at most four queries for any number of replies.

    Items forgotten since are counted, not shown: memory_used keeps ids and scores only, never the content.
    """
    wanted: dict[str, set[int]] = {kind: set() for kind in EXPLAINED}
    for reply in replies:
        ids = memory_used_ids(reply.memory_used or {})
        for kind in EXPLAINED:
            wanted[kind] |= set(ids[kind])
    page_ids, segment_ids, knowledge_ids, profile_ids = (wanted[kind] for kind in EXPLAINED)
    pages = _in_bulk(Page.objects.filter(space=space).only("id", "at", "user_message"), page_ids)
    segments = _in_bulk(Segment.objects.filter(space=space).only("id", "summary"), segment_ids)
    knowledge = _in_bulk(KnowledgeEntry.objects.filter(end_user_id=space.end_user_id).only("id", "text"), knowledge_ids)
    profiles = _in_bulk(ProfileVersion.objects.filter(end_user_id=space.end_user_id).defer("text"), profile_ids)
    explained = {}
    for reply in replies:
        used = reply.memory_used or {}
        ids = memory_used_ids(used)
        reply_pages, reply_segments, reply_knowledge, reply_profiles = (ids[kind] for kind in EXPLAINED)
        found = MemoryUsed(recent_turns=len(used.get("short_term_page_ids", [])), dropped=len(reply.dropped or []))
        found.profile = next((profiles[i] for i in reply_profiles if i in profiles), None)
        found.facts = [knowledge[i].text for i in reply_knowledge if i in knowledge]
        found.topics = [segments[i].summary for i in reply_segments if i in segments]
        found.pages = [UsedPage(pages[i].at, pages[i].user_message) for i in reply_pages if i in pages]
        found.forgotten = sum(
            len(set(ids) - found_ids.keys())
            for ids, found_ids in zip(
                (reply_pages, reply_segments, reply_knowledge, reply_profiles),
                (pages, segments, knowledge, profiles),
                strict=True,
            )
        )
        explained[reply.id] = found
    return explained


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation: the page, its chat reply (None for imported turns) and what the reply used."""

    page: Page
    reply: ChatReply | None
    used: MemoryUsed | None


def conversation_recent(*, space: MemorySpace | None, limit: int) -> list[Turn]:
    """The latest `limit` turns of the pair, oldest first, each explained; five queries however many there are."""
    if space is None:
        return []
    pages = list(Page.objects.filter(space=space).select_related("reply").without_vectors().order_by("-seq")[:limit])
    pages.reverse()
    replies = {page.id: page.reply for page in pages if hasattr(page, "reply")}
    used = memory_used_explained(space=space, replies=list(replies.values()))
    return [
        Turn(page, replies.get(page.id), used.get(replies[page.id].id) if page.id in replies else None)
        for page in pages
    ]


def turn_of(reply: ChatReply) -> Turn:
    """The turn a reply that is done became, explained (for appending it to the conversation)."""
    page = reply.page
    assert page is not None  # a done reply has its page
    return Turn(page, reply, memory_used_explained(space=reply.space, replies=[reply])[reply.id])


def _in_bulk(queryset: QuerySet, ids: set[int]) -> dict:
    return queryset.in_bulk(list(ids)) if ids else {}


# --- "What do you remember about me" -------------------------------------------------------------------------------

# Topics, facts and earlier profile versions per page. Each row carries its own controls (delete, correct, no longer
# true), so fewer rows keep a full user's page fast (see docs/decisions/0015-paged-user-pages.md).
MEMORY_PER_PAGE = 10


@dataclass(frozen=True)
class MemoryPages:
    """Which page of each paged list the end user asked for, as given (a bad or too high number still gives a page)."""

    topics: int | str | None = 1
    facts: int | str | None = 1
    versions: int | str | None = 1


@dataclass
class Remembered:
    """What the assistant remembers about one end user, as the end user sees it: a page of each list that grows.

    `facts`, `segments` and `earlier_profiles` are Django pages; their paginators' counts are the true totals.
    """

    space: MemorySpace | None
    profile: ProfileVersion | None
    earlier_profiles: paginator.Page
    facts: paginator.Page
    segments: paginator.Page
    recent_pages: list[Page]

    @property
    def paused(self) -> bool:
        return bool(self.space and self.space.paused)

    @property
    def user_knowledge(self) -> list[KnowledgeEntry]:
        return [k for k in self.facts if k.kind == KnowledgeKind.USER]

    @property
    def assistant_knowledge(self) -> list[KnowledgeEntry]:
        return [k for k in self.facts if k.kind == KnowledgeKind.ASSISTANT]

    @property
    def empty(self) -> bool:
        counts = (self.facts.paginator.count, self.segments.paginator.count)
        return not (self.profile or any(counts) or self.recent_pages)


def _page_of(rows: QuerySet, number: int | str | None, per_page: int) -> paginator.Page:
    """One page of `rows` read once (the count, then the page's rows); a bad number gives the first page, a number
    past the end the last."""
    page = paginator.Paginator(rows, per_page).get_page(number)
    page.object_list = list(page.object_list) if page.paginator.count else []
    return page


def remembered_for(
    *,
    end_user: EndUser,
    assistant: Assistant,
    pages: MemoryPages = MemoryPages(),
    per_page: int = MEMORY_PER_PAGE,
    recent_limit: int = MEMORY_PER_PAGE,
) -> Remembered:
    """The profile and a page of its earlier versions, a page of facts and of topics (newest first), the latest
    turns; a fixed number of queries however much is remembered (pinned in tests/chat/test_memory_paging.py).

    User knowledge and the profile belong to the user across assistants; assistant knowledge, topics and turns to
    this assistant only. A topic's turns are read when its section is opened (topic_pages).
    """
    space = space_find(end_user=end_user, assistant=assistant)
    versions = ProfileVersion.objects.filter(end_user=end_user).order_by("-number")
    profile = versions.first()
    earlier = versions.exclude(pk=profile.pk) if profile else versions.none()
    knowledge = (
        KnowledgeEntry.objects.filter(end_user=end_user)
        .filter(Q(kind=KnowledgeKind.USER) | Q(kind=KnowledgeKind.ASSISTANT, assistant=assistant))
        .without_vectors()
        .order_by("-created_at", "-id")
    )
    segments, recent = Segment.objects.none(), []
    if space is not None:
        # each topic's turns counted by a subquery, not a join, so counting the topics reads no turn
        segments = (
            Segment.objects.filter(space=space)
            .annotate(page_count=segment_page_count())
            .without_vectors()
            .order_by("-last_touched_at", "-id")
        )
        recent = list(
            Page.objects.filter(space=space)
            .select_related("segment")
            .without_vectors("segment")
            .order_by("-seq")[:recent_limit]
        )
    return Remembered(
        space=space,
        profile=profile,
        earlier_profiles=_page_of(earlier, pages.versions, per_page),
        facts=_page_of(knowledge, pages.facts, per_page),
        segments=_page_of(segments, pages.topics, per_page),
        recent_pages=recent,
    )


def topic_pages(*, segment: Segment) -> list[Page]:
    """The turns of one topic of the end user's memory, in order (its owner is checked by the caller's selector)."""
    return list(Page.objects.filter(segment=segment).without_vectors().order_by("seq"))
