"""Vector reads outside a retrieval: the console's search across a tenant's users, and the flat top-10 that
memory_bench times as retrieval's baseline."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memory.retrieval.channels import VECTOR_POOL
from memory.retrieval.rows import PAGE_COSINE, vector_text
from memory.services.embedding_state import embedder_for_store

# The tenant's pages nearest a question, for the console's search across users: every space of the tenant is ranked
# by the Hamming distance of its pages' two-bit codes (index-only scans of `page_space_code`, one space after
# another: the cost grows with the tenant's pages, about 100 bytes a page), the best `pool` re-ranked by exact cosine.
TENANT_VECTOR_SQL = f"""
WITH near AS (
    SELECT id FROM memory_page
    WHERE space_id = ANY(ARRAY(SELECT id FROM memory_memoryspace WHERE tenant_id = %(tenant)s))
      AND embedding_code IS NOT NULL
    ORDER BY embedding_code <~> memory_vector_code(%(vector)s::halfvec), id
    LIMIT %(pool)s
)
SELECT id, {PAGE_COSINE} AS cosine FROM memory_page WHERE id = ANY(ARRAY(SELECT id FROM near))
ORDER BY cosine DESC, id LIMIT %(limit)s
"""


def tenant_vector_pages(*, tenant_id: int, query: str, floor: float, limit: int = 50) -> dict[int, float]:
    """page id → cosine, for the tenant's pages (any user's) at least `floor` near `query`, nearest first: the
    console's search across users. One query, beside the question's embedding."""
    vector = vector_text(embedder_for_store().embed([query])[0])
    params: dict[str, Any] = {"tenant": tenant_id, "vector": vector, "pool": VECTOR_POOL, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(TENANT_VECTOR_SQL, params)
        return {page_id: float(cosine) for page_id, cosine in cursor.fetchall() if cosine >= floor}


EXACT_NEAREST_SQL = """
SELECT id FROM memory_page
WHERE space_id = %(space)s AND embedding IS NOT NULL
ORDER BY embedding <=> %(vector)s::halfvec
LIMIT %(limit)s
"""


def space_exact_nearest_pages(*, space_id: int, query: str, limit: int = 10) -> list[int]:
    """The ids of the space's `limit` pages nearest to `query` by exact cosine over all of them: a flat vector search
    with no channel, fusion or first pass (pages have no approximate index), the least any vector memory does for a
    question; memory_bench times it as retrieval's baseline on the same rows."""
    vector = vector_text(embedder_for_store().embed([query])[0])
    with connection.cursor() as cursor:
        cursor.execute(EXACT_NEAREST_SQL, {"space": space_id, "vector": vector, "limit": limit})
        return [page_id for (page_id,) in cursor.fetchall()]
