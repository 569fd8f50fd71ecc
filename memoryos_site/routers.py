"""Reads of the operator console from a PostgreSQL read replica; every write, and every read inside a transaction,
on the primary (`default`).

The replica is the `replica` database alias, configured by DATABASE_REPLICA_URL (settings). Without it everything
runs on `default` and this router changes nothing. The console's pages are read-mostly and may lag the primary by
the replication delay (typically well under a second); the chat, the API, the workers and anything that reads its
own writes stay on the primary:

- `ConsoleReadsMiddleware` marks a GET or HEAD request routed to the console (URL namespace `console`);
- `PrimaryReplicaRouter.db_for_read` sends the marked request's reads to the replica, unless the primary is inside
  a transaction (a read there must see the transaction's own writes); objects read from the replica keep it for
  their related lookups; `db_for_write` is always `default`, and only `default` is migrated.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse

REPLICA = "replica"
CONSOLE_NAMESPACE = "console"
SAFE_METHODS = ("GET", "HEAD")

_replica_reads: ContextVar[bool] = ContextVar("replica_reads", default=False)


def replica_configured() -> bool:
    """Whether a read replica is configured (DATABASE_REPLICA_URL) and its alias exists."""
    return bool(settings.DATABASE_REPLICA_URL) and REPLICA in connections.settings


def read_alias() -> str:
    """The alias for a read that may lag the primary a little: the replica when one is configured and the primary
    is not inside a transaction on this thread, else `default`."""
    if replica_configured() and not connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return REPLICA
    return DEFAULT_DB_ALIAS


class PrimaryReplicaRouter:
    """Console reads to the replica (see the module docstring); writes and migrations to `default` only."""

    def db_for_read(self, model, **hints) -> str | None:
        instance = hints.get("instance")
        if instance is not None and instance._state.db:
            return instance._state.db  # related lookups stay where their object was read
        if _replica_reads.get():
            return read_alias()
        return None

    def db_for_write(self, model, **hints) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool | None:
        # The replica holds the primary's rows: an object read from one may point at an object read from the other.
        if {obj1._state.db, obj2._state.db} <= {DEFAULT_DB_ALIAS, REPLICA, None}:
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS  # a replica follows the primary's schema through replication


class ConsoleReadsMiddleware:
    """Marks a safe (GET/HEAD) request to the console so that its reads may go to the replica."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _replica_reads.set(False)
        try:
            return self.get_response(request)
        finally:
            _replica_reads.reset(token)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> None:
        match = request.resolver_match
        if request.method in SAFE_METHODS and match is not None and CONSOLE_NAMESPACE in match.namespaces:
            _replica_reads.set(True)
        return None
