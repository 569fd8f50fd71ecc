"""Reads for the console's case view of one end user: each tab's rows on their own, a search inside the user's
memory, and what each chat reply used, as items to link to.

Every function takes the end user (or their memory space) and returns only that person's rows. Query counts are
fixed per tab whatever the size of memory (pinned in tests/dashboard/test_case_view.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core import paginator
from django.db.models import IntegerField, Q, Subquery

from memory.models import AuditEntry, ChatReply, EndUser, KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.models.chat_replies import ReplyStatus
from memory.models.tiers import KnowledgeKind, Tier
from memory.selectors.search import search_prefixes, space_search_pages
from memory.selectors.self_service import memory_used_ids
from memory.text import passage_holding

SEARCH_LIMIT = 50  # rows per kind of item a search shows; the count says how many matched in all

# --- The tabs' counts -------------------------------------------------------------------------------------------


class _RowCount(Subquery):
    """COUNT(*) of a queryset, as a scalar subquery of another query."""

    template = "(SELECT count(*) FROM (%(subquery)s) AS counted)"
    output_field = IntegerField()


@dataclass(frozen=True)
class CaseCounts:
    short_term: int = 0
    segments: int = 0
    knowledge: int = 0
    chats: int = 0
    audit: int = 0


def case_counts(*, end_user: EndUser, space: MemorySpace | None) -> CaseCounts:
    """How many items each tab holds, in one query: STM pages, segments, facts (of this space), replies, audit."""
    audit = AuditEntry.objects.filter(tenant_id=end_user.tenant_id, subject_id=end_user.pk)
    if space is None:
        return CaseCounts(audit=audit.count())
    knowledge = KnowledgeEntry.objects.filter(end_user=end_user).filter(
        Q(kind=KnowledgeKind.USER) | Q(assistant_id=space.assistant_id)
    )
    figures = {
        "short_term": Page.objects.filter(space=space, tier=Tier.SHORT_TERM),
        "segments": Segment.objects.filter(space=space),
        "knowledge": knowledge,
        "chats": ChatReply.objects.filter(space=space, status=ReplyStatus.DONE),
        "audit": audit,
    }
    annotations = {f"n_{name}": _RowCount(rows.order_by().values("pk")) for name, rows in figures.items()}
    row = MemorySpace.objects.filter(pk=space.pk).annotate(**annotations).values(*annotations).get()
    return CaseCounts(**{name.removeprefix("n_"): value for name, value in row.items()})


# --- Search inside one user's memory ----------------------------------------------------------------------------


@dataclass
class CaseSearch:
    """What matched `query` in one user's memory with one assistant: pages, segments, facts, profile versions."""

    query: str
    pages: list[Page] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    knowledge: list[KnowledgeEntry] = field(default_factory=list)
    profiles: list[ProfileVersion] = field(default_factory=list)
    # page id → the passage of a long page that holds the query: what to show of it instead of its first characters
    excerpts: dict[int, str] = field(default_factory=dict)
    prefixes: list[str] = field(default_factory=list)  # the stem prefixes the query's words match by, to highlight

    limit: int = SEARCH_LIMIT

    @property
    def count(self) -> int:
        return len(self.pages) + len(self.segments) + len(self.knowledge) + len(self.profiles)

    @property
    def truncated(self) -> bool:
        """Whether some kind has more matches than the SEARCH_LIMIT shown."""
        return any(len(rows) >= self.limit for rows in (self.pages, self.segments, self.knowledge, self.profiles))


def case_search(*, end_user: EndUser, space: MemorySpace | None, query: str) -> CaseSearch:
    """The user's items that match `query`, at most SEARCH_LIMIT of each kind; six queries.

    Turns are found as chat's retrieval finds them, by stem prefix ("allergy" finds "allergic") or as a plain
    substring, best first (memory.selectors.search.space_search_pages); segments by summary or keyword, facts and
    profile versions by substring, newest first. Case never matters.
    """
    found = CaseSearch(query=query)
    if space is None or not query.strip():
        return found
    text = query.strip()
    found.prefixes = search_prefixes(text)
    found.pages = space_search_pages(space=space, query=text, prefixes=found.prefixes, limit=SEARCH_LIMIT)
    found.excerpts = _excerpts(found.pages, text)
    segments = Segment.objects.filter(space=space).without_vectors()
    keyword = Q(keywords__icontains=text)  # the array as text: any keyword holding the query
    found.segments = list(segments.filter(Q(summary__icontains=text) | keyword).order_by("-id")[:SEARCH_LIMIT])
    knowledge = KnowledgeEntry.objects.filter(end_user=end_user).filter(
        Q(kind=KnowledgeKind.USER) | Q(assistant_id=space.assistant_id)
    )
    found.knowledge = list(
        knowledge.filter(text__icontains=text).without_vectors().order_by("-created_at", "-id")[:SEARCH_LIMIT]
    )
    profiles = ProfileVersion.objects.filter(end_user=end_user, text__icontains=text).order_by("-number")
    found.profiles = list(profiles[:SEARCH_LIMIT])
    return found


def _excerpts(pages: list[Page], query: str) -> dict[int, str]:
    """The passage of each long page that holds the query (memory.text.passage_holding), by page id."""
    excerpts = {}
    for page in pages:
        span = passage_holding(page.memory_text, query)
        if span is not None:
            excerpts[page.id] = page.memory_text[span[0] : span[1]]
    return excerpts


# --- Chats: each reply and the memory it used -----------------------------------------------------------------------


@dataclass
class ReplyMemory:
    """The items one reply used that still exist (to link to), and how many it used that are gone since."""

    profile: ProfileVersion | None = None
    pages: list[Page] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    knowledge: list[KnowledgeEntry] = field(default_factory=list)
    short_term: list[Page] = field(default_factory=list)
    forgotten: int = 0

    @property
    def count(self) -> int:
        items = len(self.pages) + len(self.segments) + len(self.knowledge) + len(self.short_term)
        return items + bool(self.profile)


@dataclass(frozen=True)
class ChatTurn:
    reply: ChatReply
    used: ReplyMemory


def _items_used(space: MemorySpace, replies: list[ChatReply]) -> dict[str, dict[int, Any]]:
    """Every item any of `replies` used, by kind and id; four queries, scoped to the space and its user."""
    wanted: dict[str, set[int]] = {"pages": set(), "segments": set(), "knowledge": set(), "profiles": set()}
    for reply in replies:
        ids = memory_used_ids(reply.memory_used or {})
        wanted["pages"] |= {*ids["pages"], *ids["short_term"]}
        for kind in ("segments", "knowledge", "profiles"):
            wanted[kind] |= set(ids[kind])
    querysets = {
        "pages": Page.objects.filter(space=space).only("id", "seq", "at", "user_message", "tier"),
        "segments": Segment.objects.filter(space=space).only("id", "summary"),
        "knowledge": KnowledgeEntry.objects.filter(end_user_id=space.end_user_id).only("id", "text", "kind"),
        "profiles": ProfileVersion.objects.filter(end_user_id=space.end_user_id).only("id", "number"),
    }
    return {kind: (qs.in_bulk(list(wanted[kind])) if wanted[kind] else {}) for kind, qs in querysets.items()}


def _reply_memory(reply: ChatReply, items: dict[str, dict[int, Any]]) -> ReplyMemory:
    ids = memory_used_ids(reply.memory_used or {})
    memory = ReplyMemory()
    pages, segments, knowledge, profiles = (items[k] for k in ("pages", "segments", "knowledge", "profiles"))
    memory.pages = [pages[i] for i in ids["pages"] if i in pages]
    memory.short_term = [pages[i] for i in ids["short_term"] if i in pages and i not in ids["pages"]]
    memory.segments = [segments[i] for i in ids["segments"] if i in segments]
    memory.knowledge = [knowledge[i] for i in ids["knowledge"] if i in knowledge]
    memory.profile = next((profiles[i] for i in ids["profiles"] if i in profiles), None)
    kinds = (("pages", pages), ("short_term", pages), ("segments", segments), ("knowledge", knowledge))
    memory.forgotten = sum(1 for kind, found in kinds for i in ids[kind] if i not in found)
    memory.forgotten += sum(1 for i in ids["profiles"] if i not in profiles)
    return memory


def chat_turns_page(*, space: MemorySpace, number, per_page: int) -> paginator.Page:
    """One page of the space's answered chat replies, newest first, each with the memory it used as items;
    six queries (the count, the replies with their pages, four for the items) however many replies and items."""
    replies = ChatReply.objects.filter(space=space, status=ReplyStatus.DONE).select_related("page")
    replies = replies.defer("page__embedding", "page__topic_embedding").order_by("-created_at", "-id")
    page: paginator.Page[Any] = paginator.Paginator(replies, per_page).get_page(number)  # its rows become turns
    shown = list(page.object_list)
    items = _items_used(space, shown)
    page.object_list = [ChatTurn(reply=reply, used=_reply_memory(reply, items)) for reply in shown]
    return page


def reply_memory(*, reply: ChatReply, space: MemorySpace) -> ReplyMemory:
    """The memory one reply of `space` used, as items to link to (the page view's chat reply); four queries."""
    return _reply_memory(reply, _items_used(space, [reply]))


# --- Audit of one user --------------------------------------------------------------------------------------------


def user_audit_page(*, end_user: EndUser, number, per_page: int) -> paginator.Page:
    """One page of the audit entries about the user, newest first (two queries: the count and the rows)."""
    entries = AuditEntry.objects.filter(tenant_id=end_user.tenant_id, subject_id=end_user.pk).order_by("-seq")
    return paginator.Paginator(entries, per_page).get_page(number)
