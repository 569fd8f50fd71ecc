"""The garbage collector of a long-running process (the web server, a Celery worker): what loading left alive is
frozen, so that full collections stop walking it (docs/decisions/0022-loaded-objects-frozen.md)."""

from __future__ import annotations

import gc

from django.urls import get_resolver


def loaded_objects_freeze(*, collect: bool = True) -> int:
    """Move every object alive now out of the collector's generations (`gc.freeze`), and return how many there are.

    A full collection otherwise walks the whole app each time it runs (232,000 objects once the site and its URL
    patterns are loaded: 127 ms on the 2-core machine, a pause of whichever request set it off); frozen objects are
    never walked again, and never freed, which suits what a process keeps until it exits. With `collect`, garbage is
    collected first, so none is frozen with them. Cumulative: call it again after a later load (the embedding model,
    warmed in a thread, which passes collect=False so that requests already served do not pause for it).
    """
    if collect:
        gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def site_loaded() -> None:
    """Import every view the URL patterns name (Django otherwise does it on the first request) and the client that
    sends tasks to the broker (otherwise loaded by the first request that queues one), then freeze what the process
    holds."""
    from memoryos_site.celery import broker_client_load

    get_resolver().url_patterns  # noqa: B018 (the property imports the URLconf and its views)
    broker_client_load()
    loaded_objects_freeze()
