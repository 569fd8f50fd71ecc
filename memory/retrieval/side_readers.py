"""What the database connection allows the statements the project writes out in SQL (retrieval's batches, the
visits queue), and reads run beside the request's own connection."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

SIDE_READERS = 2  # threads (each with its own connection) per process that run reads beside a request's own


def several_statements_per_execute() -> bool:
    """Whether one execute may carry several statements: yes with Django's default client-side parameter binding,
    no with the database's `server_side_binding` option."""
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")


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


def rows_beside(sql: str, params: dict) -> Future:
    """Run `sql` on a side reader's connection, now, while this thread goes on with its own; the future's result is
    the rows. The statement sees its own snapshot: use it for reads that need not agree row for row with the
    caller's other reads."""

    def read(side: BaseDatabaseWrapper) -> list[tuple]:
        with side.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    return side_readers.submit(read)
