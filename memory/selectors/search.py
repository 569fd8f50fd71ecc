"""Search of memory for the console: within one user's space (retrieval's own channels, memory.retrieval, plus a
stem-prefix full-text match) and across a tenant's users (the full-text column and the vector channel, paginated).

PostgreSQL's English stemmer keeps "allergy" (`allergi`) and "allergic" (`allerg`) apart, so a query word matches
by the prefix of its stem less its last letter (`allerg:*`): a noun's "-y" and the adjective meet, and "address"
still finds "addresses". Query words are ORed and pages ranked by `ts_rank_cd`, so "home address" finds a turn that
says only "my address" (below a turn that holds both words).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.core import paginator
from django.db import connection
from django.db.models import Case, Expression, F, FloatField, Q, Value, When
from django.utils import timezone

from memory.models import Page, Tenant
from memory.models.tenancy import MemorySpace
from memory.retrieval.channels import fused_score, query_terms
from memory.retrieval.config import DEFAULT
from memory.retrieval.search import channel_candidates
from memory.retrieval.vector_reads import tenant_vector_pages

SHORTEST_PREFIX = 4  # a stem is cut to no fewer letters than this (or its own length): "elm" stays "elm"

PREFIXES_SQL = """
SELECT left(stem, greatest(length(stem) - 1, least(length(stem), %(shortest)s)))
FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS term(word, n), unnest(ts_lexize('english_stem', word)) AS stem
ORDER BY n
"""


def search_prefixes(query: str) -> list[str]:
    """The stem prefixes the query's content words match by (one query; none for an empty or stopword query)."""
    terms = query_terms(query)
    if not terms:
        return []
    with connection.cursor() as cursor:
        cursor.execute(PREFIXES_SQL, {"terms": terms, "shortest": SHORTEST_PREFIX})
        return list(dict.fromkeys(row[0] for row in cursor.fetchall() if row[0]))


def prefix_query(prefixes: list[str]) -> SearchQuery:
    """Any of the prefixes, as a tsquery over stemmed lexemes (the 'simple' config leaves them as they are).
    The prefixes come from `query_terms` (letters and digits only), so they need no further quoting."""
    return SearchQuery(" | ".join(f"'{p}':*" for p in prefixes), config="simple", search_type="raw")


# --- Across the tenant's users ------------------------------------------------------------------------------------


@dataclass
class TenantSearch:
    """One page of the turns across a tenant's users that match `query`, best first."""

    query: str
    prefixes: list[str] = field(default_factory=list)
    page: paginator.Page | None = None

    @property
    def count(self) -> int:
        return self.page.paginator.count if self.page is not None else 0

    def end_user_ids(self) -> list[int]:
        """The users whose turns are shown on this page, each once (whose memory the search read)."""
        if self.page is None:
            return []
        return list(dict.fromkeys(page.space.end_user_id for page in self.page.object_list))


def tenant_search(*, tenant: Tenant, query: str, number, per_page: int) -> TenantSearch:
    """The tenant's turns whose words match `query` or whose meaning is near it (retrieval's vector channel over the
    tenant's pages, memory.retrieval.vector_reads.tenant_vector_pages, at least MEMORY_VISIT_RELEVANCE near), best
    first by ts_rank_cd plus cosine, then newest, a page at a time; four queries (the stem prefixes, the nearest pages,
    the count, the page of turns with their space, user and assistant) whatever the size of memory. A turn is found in
    either side of the dialogue; a reply the system wrote is never searched by its words."""
    found = TenantSearch(query=query, prefixes=search_prefixes(query))
    if not found.prefixes:
        return found
    words = prefix_query(found.prefixes)
    near = tenant_vector_pages(tenant_id=tenant.pk, query=query, floor=settings.MEMORY_VISIT_RELEVANCE)
    cosine: Expression = Value(0.0, output_field=FloatField())
    if near:
        cosine = Case(*(When(id=i, then=Value(c)) for i, c in near.items()), default=cosine, output_field=FloatField())
    pages = (
        Page.objects.filter(Q(search=words) | Q(id__in=list(near)), space__tenant=tenant)
        .annotate(rank=SearchRank(F("search"), words, cover_density=True) + cosine)
        .select_related("space__end_user", "space__assistant")
        .without_vectors()
        .only(*SHOWN, "space__end_user__display_name", "space__end_user__external_id", "space__assistant__name")
        .order_by("-rank", "-at", "-id")
    )
    found.page = paginator.Paginator(pages, per_page).get_page(number)
    return found


SHOWN = ("id", "seq", "at", "tier", "user_message", "assistant_reply", "reply_source", "space_id", "segment_id")


# --- Within one user's space ---------------------------------------------------------------------------------------


def space_search_pages(*, space: MemorySpace, query: str, prefixes: list[str], limit: int) -> list[Page]:
    """The space's turns for `query`, best first: those retrieval's channels find (its full-text words, or a vector
    at least MEMORY_VISIT_RELEVANCE near; memory.retrieval.search.channel_candidates, read only), those whose words
    match the stem prefixes, and those holding the query as a substring (a name or number the stemmer splits); at most
    `limit`. Two queries beside retrieval's first batch."""
    text = query.strip()
    scores = _retrieval_scores(space, text)
    matched = Q(user_message__icontains=text) | Q(assistant_reply__icontains=text) | Q(id__in=list(scores))
    rank: Expression = Value(0.0, output_field=FloatField())
    if prefixes:
        words = prefix_query(prefixes)
        matched |= Q(search=words)
        rank = SearchRank(F("search"), words, cover_density=True)
    pages = Page.objects.filter(space=space).filter(matched).annotate(rank=rank).without_vectors()
    pages = pages.select_related("segment").defer("segment__embedding").order_by("-rank", "-seq")
    found = list(pages[:limit])
    found.sort(key=lambda p: (-(scores.get(p.id, 0.0) + p.rank), -p.seq))
    return found


def _retrieval_scores(space: MemorySpace, query: str) -> dict[int, float]:
    """page id → retrieval's fused score, for the pages its channels found for `query` with some evidence."""
    candidates, _ = channel_candidates(space=space, query=query, now=timezone.now())
    floor = settings.MEMORY_VISIT_RELEVANCE
    return {c.id: fused_score(c, DEFAULT) for c in candidates if c.words > 0 or c.cosine >= floor}
