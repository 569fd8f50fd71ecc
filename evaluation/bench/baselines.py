"""Baselines measured in the same run as the figures they judge, on the same rows, so a figure can be read as a
ratio that a busy or slow machine changes much less than it changes milliseconds.

- Retrieval is compared with one exact pgvector top-10 over the same user's pages: the question embedded by the same
  embedder, then the 10 pages nearest to it by cosine over all of the user's pages
  (memory.retrieval.vector_reads.space_exact_nearest_pages). That is the least any vector memory does for a question.
- The end user's memory page is compared with the end user's password page (`password_change`): the same layout,
  login, middleware and navigation, with no memory on it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from time import perf_counter

from django.conf import settings
from django.db import connection

from memory.models import MemorySpace
from memory.retrieval.vector_reads import space_exact_nearest_pages
from memoryos_site.database import embedded_server_restart


def exact_top10_ms(space: MemorySpace, query: str) -> float:
    """Milliseconds to embed `query` and read the ids of the 10 pages of `space` nearest to it, exactly."""
    started = perf_counter()
    space_exact_nearest_pages(space_id=space.id, query=query, limit=10)
    return (perf_counter() - started) * 1000


def spaces_halved(spaces: dict[int, MemorySpace]) -> tuple[dict[int, MemorySpace], dict[int, MemorySpace]]:
    """The users split in two by the parity of their place in id order: questions to the first half measure
    retrieval first, questions to the second the baseline first, so each is timed on rows it was the first to read.
    A single user is in both halves (its cold baseline is then not cold; the run says so)."""
    ids = sorted(spaces)
    first = {i: spaces[i] for i in ids[0::2]}
    second = {i: spaces[i] for i in ids[1::2]} or first
    return first, second


def ratio(measured: dict, baseline: dict, point: str = "p95") -> float | None:
    """measured[point] / baseline[point], rounded to 0.01; None when either is missing or the baseline is 0."""
    top, bottom = measured.get(point), baseline.get(point)
    if top is None or not bottom:
        return None
    return round(top / bottom, 2)


def alternated(first: list, second: list, rng: random.Random) -> list[tuple[int, object]]:
    """The items of both lists as (0 or 1, item), interleaved one from each in turn (the list taken first each time
    drawn by `rng`), so a load that comes and goes falls on both alike."""
    merged = []
    for index in range(max(len(first), len(second))):
        pair = [(0, first[index]) if index < len(first) else None, (1, second[index]) if index < len(second) else None]
        if rng.random() < 0.5:
            pair.reverse()
        merged.extend(item for item in pair if item is not None)
    return merged


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def caches_emptiable() -> None:
    """ValueError unless this run can empty the caches memory is read through: the embedded PostgreSQL (restarted by
    us) and the OS page cache (dropped, as root). A "cold" figure read from caches would be a false one."""
    if not settings.EMBEDDED_DATABASE:
        raise ValueError("--cold restarts the embedded PostgreSQL; with DATABASE_URL, restart your server instead")
    if not os.access(DROP_CACHES, os.W_OK):
        raise ValueError(f"--cold drops the OS page cache, which needs root ({DROP_CACHES} is not writable)")


def caches_emptied() -> None:
    """Restart the embedded PostgreSQL (its shared buffers emptied) and drop the OS page cache, so the next reads come
    from disk (see `caches_emptiable`)."""
    caches_emptiable()
    connection.close()
    embedded_server_restart(settings.EMBEDDED_PGDATA)
    os.sync()
    DROP_CACHES.write_text("3\n")
