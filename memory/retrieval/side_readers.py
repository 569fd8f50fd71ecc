"""What the database connection allows the statements the project writes out in SQL (retrieval's batches, the
visits queue), and reads run beside the request's own connection."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

SIDE_READERS = 2  # threads (each with its own connection) per process that run reads beside a request's own
# psycopg's own default. Only server-binding cursors (`prepared_rows`) ever prepare: Django's client-binding cursors,
# which every other statement on a side connection uses, never do.
PREPARE_THRESHOLD = 5


def several_statements_per_execute() -> bool:
    """Whether one execute may carry several statements: yes with Django's default client-side parameter binding,
    no with the database's `server_side_binding` option."""
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")


def prepared_reads_allowed() -> bool:
    """Whether a side read may be prepared (`prepared_rows`): when enabled (MEMORY_PREPARED_READS), while the server
    keeps prepared statements (`_SideReaders.preparing_refused`), and with Django's client-side binding, under which
    no other statement of the side connection can be prepared (with `server_side_binding`, psycopg would prepare every
    statement repeated five times, the vector channel's too, whose generic plan is ten times slower)."""
    return settings.MEMORY_PREPARED_READS and side_readers.preparing and several_statements_per_execute()


def reads_beside_allowed() -> bool:
    """Whether a read may run on another connection at the same time as this thread's: when enabled
    (MEMORY_PARALLEL_READS) and this thread is not inside a transaction, whose reads must see its own writes."""
    return settings.MEMORY_PARALLEL_READS and not connection.in_atomic_block


class _SideReaders:
    """A few threads, each reading on its own connection to the default database (opened on its first read, kept
    for the next), so that independent statements of one request run at the same time on separate servers'
    backends. There are never more than SIDE_READERS per process, whatever the number of requests; each connection is
    kept no longer than DATABASE_CONN_MAX_AGE (checked before a read), and closed by `close`, and by its thread after a
    failed read.

    Threads and connections belong to the process that started them: a forked child (a web or Celery worker forked
    from a parent that had read) starts its own and leaves the parent's alone (closing an inherited connection
    would end the parent's session too)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = 0
        self._opened: set[BaseDatabaseWrapper] = set()
        self.preparing = True  # until the server loses a prepared statement (`preparing_refused`)

    def submit(self, read: Callable[[BaseDatabaseWrapper], list[tuple]]) -> Future:
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(SIDE_READERS, thread_name_prefix="memory-side-read")
                self._pid, self._opened = os.getpid(), set()
            return self._executor.submit(self._run, read)

    def _run(self, read: Callable[[BaseDatabaseWrapper], list[tuple]]) -> list[tuple]:
        side = connections[DEFAULT_DB_ALIAS]  # this thread's own connection
        with self._lock:
            self._opened.add(side)
        if side.close_at is not None and time.monotonic() >= side.close_at:
            side.close()  # kept no longer than a request's (DATABASE_CONN_MAX_AGE); the read opens a fresh one
        try:
            return read(side)
        except Exception:
            side.close()  # a broken connection is opened again by the next read
            raise

    def preparing_refused(self) -> None:
        """The server lost or confused a prepared statement (a connection pooler that cannot keep them): this process
        prepares no more, and the read that failed is read again on the request's connection (rows.Batch)."""
        if self.preparing:
            self.preparing = False
            logger.warning(
                "The database lost a prepared statement (a connection pooler that cannot keep them?): retrieval's "
                "full-text channel is no longer prepared in this process. Set MEMORY_PREPARED_READS=false, or give "
                "PgBouncer 1.21+ max_prepared_statements."
            )

    def close(self) -> None:
        """Stop the threads and close their connections (the test database is dropped only once none is open)."""
        with self._lock:
            executor, opened = self._executor, self._opened
            self._executor, self._opened = None, set()
            if self._pid != os.getpid():
                return  # a parent's threads and connections
        if executor is not None:
            executor.shutdown(wait=True)
        stopped_threads_connections_close(opened)


def stopped_threads_connections_close(opened: Iterable[BaseDatabaseWrapper]) -> None:
    """Close the connections of threads that have stopped (a pool shut down), from this thread."""
    for wrapper in opened:
        wrapper.inc_thread_sharing()  # its thread has stopped; closing from here is safe
        try:
            wrapper.close()
        finally:
            wrapper.dec_thread_sharing()


side_readers = _SideReaders()


def rows_beside(sql: str, params: dict, *, prepared: bool = False) -> Future:
    """Run `sql` on a side reader's connection, now, while this thread goes on with its own; the future's result is
    the rows. The statement sees its own snapshot: use it for reads that need not agree row for row with the
    caller's other reads. `prepared`: a statement PostgreSQL may plan once per connection (`prepared_rows`)."""

    def read(side: BaseDatabaseWrapper) -> list[tuple]:
        if prepared and prepared_reads_allowed():
            return prepared_rows(side, sql, params)
        with side.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    return side_readers.submit(read)


def prepared_rows(side: BaseDatabaseWrapper, sql: str, params: dict) -> list[tuple]:
    """`sql`'s rows, its parameters bound by the server and the statement prepared on this connection at its first
    run: PostgreSQL then plans it from scratch for its first five runs and afterwards reuses a plan made for any
    parameters (a generic plan) when its estimated cost is no worse than theirs (`plan_cache_mode` auto).

    Only for statements whose generic plan was measured to be as good (the full-text channel: its planning was a
    fifth to a quarter of its time, docs/decisions/0027-words-channel-planned-once.md); the vector channel's is not.
    psycopg keeps the connection's prepared statements (at most `prepared_max`) and PostgreSQL re-plans them after a
    schema change. Behind a pooler, prepared statements need PgBouncer 1.21 or later with `max_prepared_statements`
    set, or MEMORY_PREPARED_READS off."""
    side.ensure_connection()
    raw = side.connection
    if raw.prepare_threshold is None:  # Django turns preparing off (for poolers); a server cursor may prepare again
        raw.prepare_threshold = PREPARE_THRESHOLD
    try:
        with psycopg.Cursor(raw) as cursor:
            cursor.execute(sql, params, prepare=True)
            return cursor.fetchall()
    except (psycopg.errors.InvalidSqlStatementName, psycopg.errors.DuplicatePreparedStatement):
        side_readers.preparing_refused()
        raise
