"""`manage.py serve` (what `make run` ends with): a clear error for a taken port; web and worker start and stop."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from tests.foundation.processes import (
    REPO,
    answers,
    child_env,
    database_url_for_children,
    free_port,
    manage,
    stop,
    wait_for,
)


@pytest.mark.process
def test_a_taken_port_is_one_line_naming_the_port_and_how_to_choose_another():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = manage("serve", env=child_env(PORT=str(port)))

    assert result.returncode != 0
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert f"port {port}" in error
    assert f"PORT={port + 1}" in error
    assert "Traceback" not in error


@pytest.mark.process
def test_check_only_checks_the_port():
    result = manage("serve", "--check", env=child_env(PORT=str(free_port())))

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


@pytest.mark.process
def test_a_port_that_is_not_a_number_is_refused():
    result = manage("serve", "--check", env=child_env(PORT="eighty"))

    assert result.returncode != 0
    assert "PORT must be a port number" in result.stderr


@pytest.mark.worker
@pytest.mark.slow
def test_serve_answers_the_login_page_and_ctrl_c_stops_web_and_worker(db, tmp_path):
    port = free_port()
    # Its own var/ so this worker's beat does not share a schedule file with a developer's `make run`.
    env = child_env(PORT=str(port), DATABASE_URL=database_url_for_children(), MEMORYOS_VAR_DIR=str(tmp_path / "var"))
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--concurrency", "1"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            # the first collectstatic compresses plotly.js and the API docs' bundles: give it time
            assert wait_for(lambda: "MemoryOS is running" in log.read_text() or serve.poll() is not None, timeout=150)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=10) as response:
                assert response.status == 200
                page = response.read().decode()
                assert "Log in" in page
            [stylesheet] = re.findall(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page)  # the collected file
            asking = urllib.request.Request(f"http://127.0.0.1:{port}{stylesheet}", headers={"Accept-Encoding": "br"})
            with urllib.request.urlopen(asking, timeout=10) as response:
                assert response.headers["Content-Encoding"] == "br"
                assert "immutable" in response.headers["Cache-Control"]
            assert "worker        ready" in log.read_text()
        finally:
            code = stop(serve, signal.SIGINT, timeout=60)

    output = log.read_text()
    assert code == 0, output
    assert "Stopped the web server and the worker." in output
    assert "worker | " in output and "web    | " in output
    assert not answers("127.0.0.1", port), "the web server still answers after serve stopped"


def test_a_port_in_superscript_digits_is_refused_in_words(monkeypatch):
    from django.core.management import CommandError

    from memoryos_site.management.commands.serve import port_from_env

    monkeypatch.setenv("PORT", "8²")

    with pytest.raises(CommandError, match="PORT must be a port number"):
        port_from_env()
