"""Reads of the operator console from a PostgreSQL read replica; every write, and every read inside a transaction,
on the primary (`default`).

The replica is the `replica` database alias, configured by DATABASE_REPLICA_URL (settings). Without it everything
runs on `default` and this router changes nothing. The console's pages are read-mostly and may lag the primary by
the replication delay (typically well under a second); the chat, the API, the workers and anything that reads its
own writes stay on the primary:

- `ConsoleReadsMiddleware` marks a GET or HEAD request routed to the console (URL namespace `console`), unless its
  operator wrote within DATABASE_REPLICA_STICKY_SECONDS (read-your-writes: an edit never hides behind the lag). A
  request that writes (an INSERT, UPDATE or DELETE on the primary, bar the audit entry of a read), or any POST, pins
  its browser to the primary for that long with a cookie;
- `PrimaryReplicaRouter.db_for_read` sends the marked request's reads to the replica while it is usable
  (memoryos_site.replica_health: it answers and lags at most DATABASE_REPLICA_MAX_LAG_SECONDS; decided at the
  request's first read), unless the primary is inside a transaction (a read there must see the transaction's own
  writes); objects read from the replica keep it for their related lookups; `db_for_write` is always `default`, and
  only `default` is migrated.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import nullcontext
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse

from memoryos_site.replica_health import REPLICA, replica_usable

CONSOLE_NAMESPACE = "console"
SAFE_METHODS = ("GET", "HEAD")
PRIMARY_COOKIE = "memoryos_primary_until"  # the time until which this browser's console reads the primary
WRITE_VERB = r"(?:INSERT|UPDATE|DELETE|MERGE)\b"
WRITE_SQL = re.compile(rf"\s*(?:{WRITE_VERB}|WITH\b.*\b{WRITE_VERB})", re.I | re.S)  # a statement that writes
# A write that pins no one to the primary: the audit entry of an operator's read (every item page writes one, and
# pinning on it would send whoever browses items to the primary).
UNPINNING_WRITE = re.compile(r'\s*INSERT INTO "memory_auditentry"', re.I)


@dataclass
class _Routing:
    """One request's routing."""

    console_read: bool = False  # its reads may use the replica
    replica_ok: bool | None = None  # whether they do, decided at the first
    wrote: bool = False  # it wrote something that its operator must see at once

    def note_writes(self, execute, sql, params, many, context):
        """An execute wrapper on the primary: notes whether the request wrote."""
        if not self.wrote and isinstance(sql, str) and WRITE_SQL.match(sql) and not UNPINNING_WRITE.match(sql):
            self.wrote = True
        return execute(sql, params, many, context)


_routing: ContextVar[_Routing | None] = ContextVar("replica_routing", default=None)


def replica_configured() -> bool:
    """Whether a read replica is configured (DATABASE_REPLICA_URL) and its alias exists."""
    return bool(settings.DATABASE_REPLICA_URL) and REPLICA in connections.settings


def read_alias() -> str:
    """The alias for a read that may lag the primary a little: the replica when one is configured and usable (checked
    once per request) and the primary is not inside a transaction on this thread, else `default`."""
    if not replica_configured() or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    routing = _routing.get() or _Routing()
    if routing.replica_ok is None:
        routing.replica_ok = replica_usable()
    return REPLICA if routing.replica_ok else DEFAULT_DB_ALIAS


class PrimaryReplicaRouter:
    """Console reads to the replica (see the module docstring); writes and migrations to `default` only."""

    def db_for_read(self, model, **hints) -> str | None:
        instance = hints.get("instance")
        if instance is not None and instance._state.db:
            return instance._state.db  # related lookups stay where their object was read
        routing = _routing.get()
        if routing is not None and routing.console_read:
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
    """Marks a safe (GET/HEAD) request to the console so that its reads may go to the replica; pins the browser of
    an operator who wrote to the primary for DATABASE_REPLICA_STICKY_SECONDS."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        routing = _Routing()
        token = _routing.set(routing)
        # Django also asks db_for_write when a foreign key is set on an unsaved object: only the SQL tells a write.
        watch = connections[DEFAULT_DB_ALIAS].execute_wrapper(routing.note_writes) if replica_configured() else None
        try:
            with watch or nullcontext():
                response = self.get_response(request)
        finally:
            _routing.reset(token)
        if routing.wrote or request.method not in SAFE_METHODS:
            _pin_to_primary(request, response)
        return response

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs) -> None:
        routing = _routing.get()
        if routing is None or request.method not in SAFE_METHODS or _pinned_to_primary(request):
            return None
        match = request.resolver_match
        routing.console_read = match is not None and CONSOLE_NAMESPACE in match.namespaces
        return None


def _pin_to_primary(request: HttpRequest, response: HttpResponse) -> None:
    """Send this browser's console reads to the primary for DATABASE_REPLICA_STICKY_SECONDS. Only a browser with a
    session is pinned: an API client has no console to read."""
    seconds = settings.DATABASE_REPLICA_STICKY_SECONDS
    session = getattr(request, "session", None)
    if seconds <= 0 or session is None or session.session_key is None or not replica_configured():
        return
    until = f"{time.time() + seconds:.3f}"
    secure = settings.SESSION_COOKIE_SECURE
    response.set_cookie(PRIMARY_COOKIE, until, max_age=seconds, secure=secure, httponly=True, samesite="Lax")


def _pinned_to_primary(request: HttpRequest) -> bool:
    try:
        return time.time() < float(request.COOKIES.get(PRIMARY_COOKIE, "0"))
    except ValueError:
        return False  # a cookie not ours
