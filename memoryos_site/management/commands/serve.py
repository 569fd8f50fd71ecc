"""python manage.py serve: the web server and a Celery worker (with beat) together, for `make run`.

Both run as child processes in their own process group, their output prefixed with `web |` and `worker |`. SIGINT
(Ctrl-C) or SIGTERM stops both cleanly: the worker finishes its current task (a warm shutdown) and what it had not
acknowledged goes back to the broker. If either child dies, the other is stopped too and the command fails.
In production run gunicorn and `celery worker` under a process manager instead (docs/production.md).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from memory.management.demo import TENANT_SLUG, demo_logins
from memory.models import Tenant

STOP_TIMEOUT = 30.0
READY_TIMEOUT = 90.0
WORKER_READY = re.compile(r"celery@\S+ ready\.")


def port_from_env() -> int:
    raw = os.environ.get("PORT", "") or "8000"
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < 65536:
        raise CommandError(f"PORT must be a port number from 1 to 65535, not {raw!r}")
    return int(raw)


def port_check(host: str, port: int) -> None:
    """Raise CommandError, naming the port and how to pick another, unless `host:port` can be bound."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR as the server itself sets it, so a port left in TIME_WAIT by the last run counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise CommandError(
                f"port {port} on {host} is not free ({exc.strerror}); stop what uses it or choose another "
                f"port, e.g. PORT={port + 1} make run"
            ) from None


@dataclass
class Child:
    name: str
    process: subprocess.Popen
    ready: threading.Event = field(default_factory=threading.Event)


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM if `serve` dies without cleaning up (Linux only)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _pump(child: Child, stream: IO[str], out: IO[str], marker: re.Pattern | None) -> None:
    for line in stream:
        out.write(f"{child.name:<6} | {line}")
        out.flush()
        if marker is not None and marker.search(line):
            child.ready.set()


class Command(BaseCommand):
    help = "Run the web server on 127.0.0.1:$PORT (default 8000) and a Celery worker with beat; Ctrl-C stops both."
    requires_system_checks = []  # runserver runs them in its own process

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=None, help="port (default: $PORT or 8000)")
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes (default 2)")
        parser.add_argument("--check", action="store_true", help="only check that the port is free, then exit")

    def handle(self, *args: object, host: str, port: int | None, concurrency: int, check: bool, **opts: object) -> None:
        port = port or port_from_env()
        port_check(host, port)
        if check:
            return
        self._collect_static()
        # The web server links the collected files and whitenoise serves them (not runserver's own static view):
        # hashed names, gzip or brotli, cached for a year, as in production.
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "STATIC_COLLECTED": "true"}
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        celery = [sys.executable, "-m", "celery", "-A", "memoryos_site"]
        web = [*manage, "runserver", "--noreload", "--nostatic", f"{host}:{port}"]
        children = [
            self._spawn("worker", [*celery, "worker", "--beat", "-l", "info", f"--concurrency={concurrency}"], env),
            self._spawn("web", web, env),
        ]
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        self._announce_when_ready(children, host, port, stop)
        while not stop.is_set() and all(child.process.poll() is None for child in children):
            stop.wait(0.2)
        failed = [child for child in children if child.process.poll() not in (None, 0)]
        self._stop(children)
        if failed and not stop.is_set():
            names = ", ".join(f"{c.name} (exit code {c.process.returncode})" for c in failed)
            raise CommandError(f"stopped because a process exited: {names}")
        self.stdout.write("Stopped the web server and the worker.")

    def _collect_static(self) -> None:
        """collectstatic into STATIC_ROOT; only files that changed are compressed again (seconds after the first)."""
        started = time.monotonic()
        call_command("collectstatic", interactive=False, verbosity=0)
        seconds = time.monotonic() - started
        self.stdout.write(f"Collected the static files into {settings.STATIC_ROOT} ({seconds:.1f} s).")

    def _spawn(self, name: str, command: list[str], env: dict[str, str]) -> Child:
        process = subprocess.Popen(
            command,
            cwd=settings.BASE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,  # Ctrl-C reaches only us; we stop the children in order
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        child = Child(name=name, process=process)
        marker = WORKER_READY if name == "worker" else None
        threading.Thread(target=_pump, args=(child, process.stdout, sys.stdout, marker), daemon=True).start()
        return child

    def _announce_when_ready(self, children: list[Child], host: str, port: int, stop: threading.Event) -> None:
        """Print the URLs and logins once the web server answers and the worker is ready (or time runs out)."""
        web = next(c for c in children if c.name == "web")
        worker = next(c for c in children if c.name == "worker")
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline and not stop.is_set() and web.process.poll() is None:
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                web.ready.set()
                break
            except OSError:
                stop.wait(0.2)
        while time.monotonic() < deadline and not stop.is_set() and not worker.ready.is_set():
            stop.wait(0.2)
        if stop.is_set() or any(c.process.poll() is not None for c in children):
            return
        base = f"http://{host}:{port}"
        lines = [
            "",
            "MemoryOS is running. Ctrl-C stops the web server and the worker.",
            f"  home          {base}/",
            f"  login         {base}/accounts/login/",
            f"  Django admin  {base}/admin/",
            f"  agents        {base}/mcp/ (MCP), {base}/v1 (OpenAI-compatible); see docs/connecting.md",
            f"  worker        {'ready' if worker.ready.is_set() else 'still starting (see its log above)'}",
        ]
        if Tenant.objects.filter(slug=TENANT_SLUG).exists():
            lines.append(demo_logins(settings.DEMO_PASSWORD))
        connection.close()  # this process only waits from now on; its connection would stay open until it exits
        self.stdout.write("\n".join(lines))

    def _stop(self, children: list[Child]) -> None:
        for child in children:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGTERM)  # Celery: warm shutdown; runserver: exit
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in children:
            try:
                child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stderr.write(f"{child.name} did not stop in {STOP_TIMEOUT:.0f} s; killing it")
                child.process.kill()
                child.process.wait()
