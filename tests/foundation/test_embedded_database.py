"""The embedded PostgreSQL: two processes may start it at once, and a crashed run is recovered or explained."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    "from django.db import connection; cursor = connection.cursor(); "
    "cursor.execute(\"SELECT extversion FROM pg_extension WHERE extname = 'vector'\"); "
    "print('vector', cursor.fetchone())"
)


def manage(var_dir: Path, *args: str, background: bool = False, shared_buffers: str = ""):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_ALLOW_ASYNC_UNSAFE", "EMBEDDED_DB_SHARED_BUFFERS"}
    }
    env["MEMORYOS_VAR_DIR"] = str(var_dir)
    env["EMBEDDED_DB_SHARED_BUFFERS"] = shared_buffers
    command = [sys.executable, "manage.py", *args]
    if background:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)


SHOW_SHARED_BUFFERS = (
    "from django.db import connection; cursor = connection.cursor(); cursor.execute('SHOW shared_buffers'); "
    "print('shared_buffers', cursor.fetchone()[0])"
)


def postmaster_pid(var_dir: Path) -> int:
    return int((var_dir / "pgdata" / "postmaster.pid").read_text().splitlines()[0])


def stop(var_dir: Path, *, wait: bool = False) -> None:
    pid_file = var_dir / "pgdata" / "postmaster.pid"
    if pid_file.exists():
        try:
            os.kill(postmaster_pid(var_dir), signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    while wait and pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.fixture
def var_dir(tmp_path):
    os.chmod(tmp_path, 0o755)  # the server runs as an unprivileged user when the tests run as root
    yield tmp_path / "var"
    stop(tmp_path / "var")


@pytest.mark.process
def test_a_command_that_needs_no_database_starts_none(var_dir):
    result = manage(var_dir, "check")
    assert result.returncode == 0, result.stderr
    assert not (var_dir / "pgdata").exists()  # importing settings only says where the server would listen


@pytest.mark.slow
def test_two_processes_starting_the_embedded_server_at_once_both_get_it(var_dir):
    first = manage(var_dir, "migrate", "--no-input", background=True)
    second = manage(var_dir, "migrate", "--no-input", background=True)
    outputs = [p.communicate(timeout=240) for p in (first, second)]
    assert [p.returncode for p in (first, second)] != [1, 1], outputs
    # one of two concurrent migrates may lose the race on a table, but the server itself started once, for both
    probe = manage(var_dir, "shell", "-c", PROBE)
    assert probe.returncode == 0, probe.stderr
    assert "vector ('0.8" in probe.stdout


@pytest.mark.slow
def test_a_server_killed_mid_run_is_recovered_on_the_next_start(var_dir):
    assert manage(var_dir, "shell", "-c", PROBE).returncode == 0
    os.kill(postmaster_pid(var_dir), signal.SIGKILL)  # a crash: postmaster.pid is left behind
    time.sleep(1)
    probe = manage(var_dir, "shell", "-c", PROBE)
    assert probe.returncode == 0, probe.stderr
    assert "vector" in probe.stdout


@pytest.mark.slow
def test_a_damaged_data_directory_is_one_line_saying_what_to_delete(var_dir):
    assert manage(var_dir, "shell", "-c", PROBE).returncode == 0
    stop(var_dir)
    time.sleep(2)
    (var_dir / "pgdata" / "global" / "pg_control").write_bytes(b"garbage")
    result = manage(var_dir, "shell", "-c", PROBE)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"delete {var_dir / 'pgdata'}" in result.stderr


@pytest.mark.slow
def test_the_embedded_servers_cache_size_comes_from_the_environment_and_a_size_it_cannot_take_is_taken_back(
    var_dir,
):
    started = manage(var_dir, "shell", "-c", SHOW_SHARED_BUFFERS, shared_buffers="48MB")
    assert "shared_buffers 48MB" in started.stdout, started.stderr
    running = manage(var_dir, "shell", "-c", SHOW_SHARED_BUFFERS, shared_buffers="64MB")
    assert "shared_buffers 48MB" in running.stdout, "a server others use is not restarted under them"
    assert "takes effect when the embedded PostgreSQL next starts" in running.stderr
    stop(var_dir, wait=True)
    assert "shared_buffers 64MB" in manage(var_dir, "shell", "-c", SHOW_SHARED_BUFFERS).stdout, "stored, unset since"
    stop(var_dir, wait=True)
    too_large = manage(var_dir, "shell", "-c", SHOW_SHARED_BUFFERS, shared_buffers="4000GB")
    assert too_large.returncode != 0 and "Traceback" not in too_large.stderr
    assert "did not start with shared_buffers = 4000GB" in too_large.stderr
    after = manage(var_dir, "shell", "-c", SHOW_SHARED_BUFFERS)
    assert after.returncode == 0 and "shared_buffers 64MB" in after.stdout, "started again with the size it had"
