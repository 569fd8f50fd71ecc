"""The garbage collector of a long-running process (the web server, a Celery worker): what loading left alive is
frozen, so that full collections stop walking it (docs/decisions/0022-loaded-objects-frozen.md)."""

from __future__ import annotations

import gc

from celery import current_app
from django.core.exceptions import ImproperlyConfigured
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
    get_resolver().url_patterns  # noqa: B018 (the property imports the URLconf and its views)
    broker_client_load()
    loaded_objects_freeze()


def broker_client_load() -> None:
    """Load the code that sends a task to the broker, without connecting: the process's Celery app's kombu transport
    (with the default broker, kombu's SQLAlchemy transport and SQLAlchemy itself). Otherwise the first task a request
    queues loads about 42,000 objects after the freeze, and every later full collection walks them: 23-27 ms on the
    2-core machine, against 1.4-2.8 ms when they were loaded before it (docs/decisions/0022). A broker URL no transport
    serves stops the process here with ImproperlyConfigured, rather than failing every request that queues a task."""
    try:
        # the connection resolves the transport's class (importing its module); the property makes it (a transport
        # whose client library is missing refuses here); nothing connects
        with current_app.connection_for_write() as connection:
            connection.transport  # noqa: B018
    except (KeyError, ImportError) as exc:  # an unknown scheme, or a client library that is not installed
        raise ImproperlyConfigured(
            f"CELERY_BROKER_URL names a broker this process cannot send tasks to ({exc}): use redis://, amqp:// or "
            "leave it unset for the database"
        ) from exc
