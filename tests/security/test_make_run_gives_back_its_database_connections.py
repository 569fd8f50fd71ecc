"""`make run`'s server (manage.py serve: runserver and a Celery worker) gives back every database connection a burst
of parallel chats and an erasure opened: the count on the database returns to where it was before the burst.

Before the fix, runserver's request threads each left their connection open (DATABASE_CONN_MAX_AGE) after they
ended: 4 connections before a burst, 26 twenty seconds after it; and the web process's broker engine kept the
five connections its request threads had published through at once (SQLAlchemy's default pool): 3 before, 8 after.
Each connection is listed by process, thread and opener on failure (the children name theirs, `application_name`)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from evaluation.fake_llm import fake_llm_server
from tests.api.conftest import make_token
from tests.foundation.processes import (
    REPO,
    child_env,
    connections_listed,
    connections_named,
    connections_open,
    database_url_for_children,
    free_port,
    steady_count,
    stop,
    wait_for,
)

CHATS = 20
SETTLE_SECONDS = 20  # the longest a connection may stay open after the last request ended


def broker_messages_waiting() -> int:
    """Tasks queued on the database broker that no worker has taken yet."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM kombu_message WHERE visible")
        return cursor.fetchone()[0]


def call(url: str, token: str, body: dict) -> int:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def serve_env(port: int, llm_url: str, var: Path) -> dict[str, str]:
    """`make run`'s environment (DEBUG on, the default CONN_MAX_AGE) on this test database and the fake model."""
    return child_env(
        DEBUG="true",
        PORT=str(port),
        DATABASE_URL=database_url_for_children(),
        MEMORYOS_VAR_DIR=str(var),
        # collected once into the checkout's var/ and kept: compressing plotly.js again would take a minute
        STATIC_ROOT=str(Path(settings.VAR_DIR) / "test-staticfiles"),
        LLM_BASE_URL=llm_url,
        LLM_API_KEY="fake",
        EMBEDDING_BACKEND="openai",
        EMBEDDING_MODEL="fake-embedding",
        API_RATE_LIMIT="100000/min",
    )


def burst(api: str, token: str, user: str, *, racing: bool = True) -> list[int]:
    """CHATS parallel chats of `user`, and their erasure while they run (`racing`) or once they are answered."""

    def chat(n: int) -> int:
        return call(f"{api}/chat/", token, {"user": user, "assistant": "ava", "message": f"fact number {n}"})

    def erase() -> int:
        time.sleep(0.3)
        body = {"dry_run": False, "legal_basis": "GDPR Art. 17(1)(a)", "reason": "asked to be forgotten"}
        return call(f"{api}/users/{user}/erasure/", token, body)

    with ThreadPoolExecutor(max_workers=CHATS + 1) as pool:
        chats = [pool.submit(chat, n) for n in range(CHATS)]
        if not racing:
            wait(chats)
        erasure = pool.submit(erase)
        return [c.result() for c in chats] + [erasure.result()]


def settled_base() -> int:
    """The connection count once the worker has taken every queued task and the count has stopped changing."""
    wait_for(lambda: broker_messages_waiting() == 0, timeout=60)
    return steady_count()


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_chats_and_an_erasure_leave_no_connection_open_behind_them(tenant, tmp_path):
    token = make_token(tenant)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api/v1"
    log = tmp_path / "serve.log"
    with fake_llm_server() as llm_url, log.open("w") as out:
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--concurrency", "1"],
            cwd=REPO,
            env=connections_named(serve_env(port, llm_url, tmp_path / "var")),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            assert wait_for(lambda: "MemoryOS is running" in log.read_text() or serve.poll() is not None, timeout=150)
            # A first burst brings every process to its steady state, whatever the machine's load: its chats all
            # answer (none loses a race), so they read beside (the side readers), publish tasks (the web process's
            # broker connection) and give the worker work (its connections).
            warm_up = burst(api, token, "warm-up", racing=False)
            base = settled_base()
            codes = burst(api, token, "racer")
            during = connections_open()
            settled = wait_for(lambda: connections_open() <= base, timeout=SETTLE_SECONDS)
            after, left_open = connections_open(), connections_listed()
        finally:
            stop(serve, timeout=60)

    print(f"connections: base {base}, right after the burst {during}, {SETTLE_SECONDS} s later {after}")
    # chats that lose the race to the erasure are answered 409/410 (tests/api/test_erasure_under_load.py)
    assert warm_up[:CHATS].count(200) == CHATS, (warm_up, log.read_text()[-3000:])
    assert codes.count(200) > 0, (codes, log.read_text()[-3000:])
    assert settled, f"{after} connections open {SETTLE_SECONDS} s after the burst; {base} before it: {left_open}"


def test_a_side_reader_opens_a_fresh_connection_once_its_own_is_older_than_conn_max_age(db):
    from memory.retrieval.side_readers import rows_beside, side_readers

    def backend() -> int:
        return rows_beside("SELECT pg_backend_pid()", {}).result(timeout=10)[0][0]

    backend()
    kept = {side.connection.info.backend_pid for side in side_readers._opened if side.connection is not None}
    for side in side_readers._opened:
        side.close_at = time.monotonic() - 1  # as if DATABASE_CONN_MAX_AGE had passed since it connected

    assert kept and backend() not in kept


def test_the_broker_keeps_one_connection_per_process_after_parallel_publishes(db):
    from kombu import Connection
    from kombu.transport.sqlalchemy import Channel
    from sqlalchemy import text

    from memoryos_site.database import sqlalchemy_broker_url

    if not settings.CELERY_BROKER_URL.startswith("sqla+"):
        pytest.skip("the database broker's engine only")
    url, publishers = sqlalchemy_broker_url(connection.settings_dict), 6
    together = threading.Barrier(publishers)

    def publish() -> None:  # as a request thread does, all of them at once
        with Connection(url, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as broker:
            session = broker.default_channel.session
            session.execute(text("SELECT 1"))  # takes a connection from the process's engine
            together.wait(timeout=10)
            session.commit()  # and gives it back

    with ThreadPoolExecutor(publishers) as pool:
        for future in [pool.submit(publish) for _ in range(publishers)]:
            future.result()
    with Connection(url, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS) as broker:
        engine, _ = broker.default_channel._open()
    try:
        assert engine.pool.checkedin() == 1, engine.pool.status()
    finally:
        engine.dispose()
        Channel._engines.clear()
