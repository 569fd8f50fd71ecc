"""Reads of memory items within a tenant: pages, segments (and their heat history), knowledge, profile versions.

Each `<item>_get` returns one item of `tenant` or raises the model's DoesNotExist, so another tenant's id is simply
not found; each `<item>_list` returns a queryset, newest first, with the joins its callers need. Optional keyword
arguments narrow either one; None means "any":

- `end_user` and `assistant` scope it to one person's memory, as the chat does for "what Ava remembers": their
  pages and segments with that assistant, and the knowledge they see with it (about the user, and what that
  assistant learnt);
- `user_external_id`, `assistant_external_id` and the item's own fields (`tier`, `pinned`, ...) are the API's
  list filters (exact matches).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import BooleanField, Count, F, Func, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from memory.models import (
    Assistant,
    EndUser,
    HeatSample,
    KnowledgeEntry,
    MemorySpace,
    Page,
    ProfileVersion,
    Segment,
    Tenant,
)
from memory.models.tiers import KnowledgeKind, VectorQuerySet


def correlated_count(queryset: QuerySet, outer_path: str) -> Coalesce:
    """The number of `queryset` rows whose `outer_path` is the outer row, to annotate with (0 when none): a
    correlated COUNT(*), computed only for the rows a query returns, which PostgreSQL can answer from an index
    on `outer_path` alone where the queryset filters nothing else."""
    rows = queryset.filter(**{outer_path: OuterRef("pk")}).order_by().values(outer_path).annotate(n=Count("*"))
    return Coalesce(Subquery(rows.values("n")[:1], output_field=IntegerField()), 0)


def segment_page_count() -> Coalesce:
    """Each segment's number of pages, to annotate segments with: a `correlated_count`, answered from the index on
    the pages' segment alone (an index-only scan). Counting the pages' ids instead, as a join's `Count("pages")`
    does, read every page row from the table: 6,000 scattered reads for a full user's 200 segments when they were
    not cached (see docs/decisions/0015-paged-user-pages.md)."""
    return correlated_count(Page.objects.all(), "segment")


_Rows = TypeVar("_Rows", bound=QuerySet)  # a queryset keeps its class (VectorQuerySet) when narrowed


def _narrowed(queryset: _Rows, **lookups) -> _Rows:
    """`queryset` filtered by every lookup whose value is not None."""
    return queryset.filter(**{lookup: value for lookup, value in lookups.items() if value is not None})


# --- Pages ------------------------------------------------------------------------------------------------------


def page_list(
    *,
    tenant: Tenant,
    end_user: EndUser | None = None,
    assistant: Assistant | None = None,
    user_external_id: str | None = None,
    assistant_external_id: str | None = None,
    tier: str | None = None,
    segment_id: int | None = None,
    pinned: bool | None = None,
) -> VectorQuerySet:  # of Page
    """The tenant's pages, newest first, with their owner and assistant."""
    pages = Page.objects.filter(space__tenant=tenant).select_related("space__end_user", "space__assistant")
    pages = pages.without_vectors()
    pages = _narrowed(
        pages,
        space__end_user=end_user,
        space__assistant=assistant,
        space__end_user__external_id=user_external_id,
        space__assistant__external_id=assistant_external_id,
        tier=tier,
        segment_id=segment_id,
        pinned=pinned,
    )
    return pages.order_by("-at", "-id")


def page_get(*, tenant: Tenant, id: int, end_user: EndUser | None = None, assistant: Assistant | None = None) -> Page:
    """The page with its owner, assistant, segment, source reply and chain neighbours."""
    return (
        page_list(tenant=tenant, end_user=end_user, assistant=assistant)
        .select_related("segment", "reply", "prev_page", "next_page")
        .without_vectors("prev_page", "next_page", "segment")
        .get(pk=id)
    )


# --- Segments ---------------------------------------------------------------------------------------------------


def segment_list(
    *,
    tenant: Tenant,
    end_user: EndUser | None = None,
    assistant: Assistant | None = None,
    user_external_id: str | None = None,
    assistant_external_id: str | None = None,
    pinned: bool | None = None,
    locked: bool | None = None,
) -> QuerySet[Segment]:
    """The tenant's segments, most recently changed first, with their owner, assistant and `page_count`."""
    segments = (
        Segment.objects.filter(space__tenant=tenant)
        .select_related("space__end_user", "space__assistant")
        .annotate(page_count=segment_page_count())
        .without_vectors()
    )
    segments = _narrowed(
        segments,
        space__end_user=end_user,
        space__assistant=assistant,
        space__end_user__external_id=user_external_id,
        space__assistant__external_id=assistant_external_id,
        pinned=pinned,
        locked=locked,
    )
    return segments.order_by("-updated_at", "-id")


def segment_get(
    *, tenant: Tenant, id: int, end_user: EndUser | None = None, assistant: Assistant | None = None
) -> Segment:
    return segment_list(tenant=tenant, end_user=end_user, assistant=assistant).get(pk=id)


def heat_sample_list(*, segment: Segment) -> QuerySet[HeatSample]:
    """The segment's heat history, oldest first."""
    return HeatSample.objects.filter(segment=segment).order_by("at", "id")


# --- Knowledge --------------------------------------------------------------------------------------------------


def knowledge_list(
    *,
    tenant: Tenant,
    end_user: EndUser | None = None,
    assistant: Assistant | None = None,
    user_external_id: str | None = None,
    assistant_external_id: str | None = None,
    kind: str | None = None,
    pinned: bool | None = None,
    locked: bool | None = None,
) -> QuerySet[KnowledgeEntry]:
    """The tenant's knowledge entries, newest first, with their owner, assistant, source segment and pages."""
    entries = (
        KnowledgeEntry.objects.filter(end_user__tenant=tenant)
        .select_related("end_user", "assistant", "source_segment")
        .prefetch_related(Prefetch("source_pages", queryset=Page.objects.without_vectors().order_by("seq")))
        .without_vectors("source_segment")
    )
    if assistant is not None:  # what the user sees with this assistant: facts about them, and what it learnt
        entries = entries.filter(Q(kind=KnowledgeKind.USER) | Q(kind=KnowledgeKind.ASSISTANT, assistant=assistant))
    entries = _narrowed(
        entries,
        end_user=end_user,
        end_user__external_id=user_external_id,
        assistant__external_id=assistant_external_id,
        kind=kind,
        pinned=pinned,
        locked=locked,
    )
    return entries.order_by("-created_at", "-id")


def knowledge_get(
    *, tenant: Tenant, id: int, end_user: EndUser | None = None, assistant: Assistant | None = None
) -> KnowledgeEntry:
    return knowledge_list(tenant=tenant, end_user=end_user, assistant=assistant).get(pk=id)


# --- Profile versions -------------------------------------------------------------------------------------------


def profile_version_list(
    *, tenant: Tenant, end_user: EndUser | None = None, user_external_id: str | None = None
) -> QuerySet[ProfileVersion]:
    """The tenant's profile versions, newest first per user (a user's first one is their current profile), with the
    segment each came from."""
    versions = (
        ProfileVersion.objects.filter(end_user__tenant=tenant)
        .select_related("end_user", "source_segment")
        .without_vectors("source_segment")
    )
    versions = _narrowed(versions, end_user=end_user, end_user__external_id=user_external_id)
    return versions.order_by("end_user_id", "-number")


def profile_version_get(*, tenant: Tenant, id: int, end_user: EndUser | None = None) -> ProfileVersion:
    return profile_version_list(tenant=tenant, end_user=end_user).get(pk=id)


# --- Search -----------------------------------------------------------------------------------------------------


def _words(text: str) -> SearchQuery:
    """The words of `text` as a web-style full-text query (quoted phrases, `or`, `-word`), stemmed as pages are."""
    return SearchQuery(text, config="english", search_type="websearch")


def page_search(*, tenant: Tenant, end_user: EndUser, text: str, assistant: Assistant | None = None) -> QuerySet[Page]:
    """One user's pages (with `assistant`, only those with it) holding the words of `text`, best match first.

    Matches the pages' generated `search` column (a system reply's words are not searched). A page can match a
    query without negation only if it holds one of the query's words, so such a query first narrows the pages by
    the user's own search keys of those words (`Page.search_keys`, a GIN index listing each word's pages per space),
    instead of walking every user's pages that hold the word or every page of the user; the match itself is still
    decided on `search`, through the operator's function (`ts_match_vq`), which the planner cannot answer from the
    index over every user's `search` (it chose that index, walking 138,000 entries for one user's 143 pages at 1,000
    users). A query with a negation (`-word`) can match pages holding none of its words and is not narrowed.
    """
    words = _words(text)
    pages = page_list(tenant=tenant, end_user=end_user, assistant=assistant)
    keys = _search_keys(text, end_user=end_user, assistant=assistant)
    if keys is None:
        pages = pages.filter(search=words)
    else:
        matched = Func(F("search"), words, function="ts_match_vq", output_field=BooleanField())
        pages = pages.filter(search_keys__overlap=keys).alias(matched=matched).filter(matched=True)
    return pages.annotate(rank=SearchRank(F("search"), words)).order_by("-rank", "-at", "-id")


QUOTED_LEXEME = re.compile(r"'(?:[^']|'')*'")
# The text as a web-style query, and the search keys of the query's words in each of the user's memory spaces.
SEARCH_KEYS_SQL = r"""
WITH query AS (
    SELECT websearch_to_tsquery('english', %(text)s)::text AS text
), lexemes AS (
    SELECT array_agg(DISTINCT replace(m[1], '''''', '''')) AS words
    FROM query, regexp_matches(query.text, '''((?:[^'']|'''')*)''', 'g') AS m
)
SELECT query.text, ARRAY(
    SELECT DISTINCT key
    FROM {space} s, unnest(memory_search_keys(s.id, array_to_tsvector(lexemes.words))) AS key
    WHERE s.end_user_id = %(user)s AND (%(assistant)s::bigint IS NULL OR s.assistant_id = %(assistant)s)
    ORDER BY key
) FROM query, lexemes
"""


def _search_keys(text: str, *, end_user: EndUser, assistant: Assistant | None) -> list[int] | None:
    """The search keys of the words of `text` as a web-style query in the user's memory spaces (with `assistant`,
    its space only); None when the query holds a negation (or no word), as such a query cannot be narrowed."""
    params: dict[str, Any] = {"text": text, "user": end_user.pk, "assistant": assistant.pk if assistant else None}
    with connection.cursor() as cursor:
        cursor.execute(SEARCH_KEYS_SQL.format(space=MemorySpace._meta.db_table), params)
        query, keys = cursor.fetchone()
    negated = "!" in QUOTED_LEXEME.sub("", query)
    return None if negated or not keys else keys


def knowledge_search(
    *, tenant: Tenant, end_user: EndUser, text: str, assistant: Assistant | None = None
) -> QuerySet[KnowledgeEntry]:
    """One user's knowledge entries (with `assistant`, those they see with it) holding the words of `text`, best
    match first. A user keeps at most MEMORY_KNOWLEDGE_CAPACITY entries per store, so the vector is built per query."""
    words = _words(text)
    entries = knowledge_list(tenant=tenant, end_user=end_user, assistant=assistant)
    entries = entries.annotate(words=SearchVector("text", config="english")).filter(words=words)
    return entries.annotate(rank=SearchRank(F("words"), words)).order_by("-rank", "-created_at", "-id")
