"""Helpers for tests that run manage.py, the serve command or a Celery worker as real processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection
from kombu import pools

from memoryos_site.celery import app as celery_app
from memoryos_site.database import embedded_database_url

REPO = Path(settings.BASE_DIR)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        return False
    return True


def database_url_for_children() -> str:
    """A DATABASE_URL for the database this test run uses (the test database, not the developer's)."""
    db = connection.settings_dict
    if not db["HOST"].startswith("/"):
        raise RuntimeError("these tests start processes against the embedded PostgreSQL only")
    return embedded_database_url(db["HOST"], db["NAME"])


def child_env(**overrides: str) -> dict[str, str]:
    # DJANGO_ALLOW_ASYNC_UNSAFE is set for the browser tests' event loop; a child process must not inherit it
    dropped = {"DATABASE_URL", "CELERY_BROKER_URL", "PORT", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(DJANGO_SETTINGS_MODULE="memoryos_site.settings", PYTHONUNBUFFERED="1")
    env.update(overrides)
    return env


def manage(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_for(condition: Callable[[], bool], *, timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    """Signal the process and wait for it; kill it if it does not exit in time."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


@contextmanager
def worker(*, env: dict[str, str], queue: str, log: Path) -> Iterator[subprocess.Popen]:
    """A real `celery worker` (solo pool) consuming `queue`, stopped on exit."""
    command = [sys.executable, "-m", "celery", "-A", "memoryos_site", "worker", "--pool", "solo"]
    command += ["--concurrency", "1", "-l", "info", "-Q", queue, "--without-gossip", "--without-mingle"]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            yield process
        finally:
            stop(process)


@contextmanager
def site_served(*, env: dict[str, str], var: Path, log: Path) -> Iterator[str]:
    """The site as `make run` serves it (`manage.py serve`: runserver and a Celery worker) on a free port, with `env`
    on top of `child_env()`; yields its base URL once it says it is running, and stops it with Ctrl-C on exit."""
    port = free_port()
    env = child_env(
        PORT=str(port),
        MEMORYOS_VAR_DIR=str(var),  # its own beat schedule, not a developer's `make run`'s
        # collected once into the checkout's var/ and kept: compressing plotly.js again would take a minute
        STATIC_ROOT=str(Path(settings.VAR_DIR) / "test-staticfiles"),
        **env,
    )
    command = [sys.executable, "manage.py", "serve", "--concurrency", "1"]
    with log.open("w") as out:
        serve = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            running = wait_for(
                lambda: "MemoryOS is running" in log.read_text() or serve.poll() is not None, timeout=150
            )
            assert running and serve.poll() is None, log.read_text()[-3000:]
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(serve, signal.SIGINT, timeout=60)


@contextmanager
def publishing_to(broker_url: str, *, queue: str) -> Iterator[None]:
    """Make this process's Celery app publish to `broker_url` and `queue` for real (not eagerly)."""
    conf = celery_app.conf
    saved = conf.broker_url, conf.task_default_queue, conf.task_always_eager
    _forget_connections()
    conf.broker_url, conf.task_default_queue, conf.task_always_eager = broker_url, queue, False
    try:
        yield
    finally:
        _forget_connections()
        conf.broker_url, conf.task_default_queue, conf.task_always_eager = saved


def _forget_connections() -> None:
    """Drop the app's cached broker connections and routing, so the next publish reads the configuration again."""
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
        celery_app._pool = None
    celery_app.__dict__.pop("amqp", None)
    # kombu keeps producer pools in a global registry keyed by broker URL; one left by an earlier test would hand
    # out connections of the pool just closed ("Acquire on closed pool").
    pools.reset()
    # kombu's SQLAlchemy transport caches one engine per URL; its pooled connections would keep the test
    # database open and stop pytest-django from dropping it.
    from kombu.transport.sqlalchemy import Channel

    for engine, _session in Channel._engines.values():
        engine.dispose()
    Channel._engines.clear()


CONNECTION_NAMES = Path(__file__).parent / "connection_names"


def connections_named(env: dict[str, str]) -> dict[str, str]:
    """`env` for a child whose PostgreSQL connections say which process and thread opened them (application_name)."""
    path = os.pathsep.join(p for p in (str(CONNECTION_NAMES), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path}


def connections_open(*, named: str = "") -> int:
    """Connections to this test database, other than this process's own; with `named`, only those whose
    application_name starts with it (`connections_named`: "web:" for the web server's, "worker:" for the worker's)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND starts_with(coalesce(application_name, ''), %s)",
            [named],
        )
        return cursor.fetchone()[0]


def connections_listed() -> list[tuple]:
    """Who holds each other connection to this test database and what it last ran, for the failure message."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT application_name, backend_start::time, state, left(query, 60) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() ORDER BY backend_start"
        )
        return cursor.fetchall()


def steady_count(*, unchanged_for: float = 3, longest: float = 30, named: str = "") -> int:
    """The connection count (see `connections_open`) once it has not changed for `unchanged_for` seconds (or after
    `longest`)."""
    deadline = time.monotonic() + longest
    count, since = connections_open(named=named), time.monotonic()
    while time.monotonic() - since < unchanged_for and time.monotonic() < deadline:
        time.sleep(0.5)
        now = connections_open(named=named)
        if now != count:
            count, since = now, time.monotonic()
    return count
