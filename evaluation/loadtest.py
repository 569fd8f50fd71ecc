"""A production-shape load test: gunicorn (4 workers), a Celery worker and beat on Redis, PostgreSQL, a fake LLM.

`load_run()` starts the processes against the database this process uses, creates a tenant and an API token for the
run, drives the site with locust headless (evaluation/locustfile.py), stops everything, then checks the database:
every acknowledged turn is stored exactly once (or is gone with its erased user), and no answer was a 5xx.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection

from evaluation.fake_llm import fake_llm_server
from memory.models import EndUser, ExportJob, JobStatus, Page, Tenant
from memory.services.api_tokens import api_token_create
from memory.services.audit import Actor
from memory.services.tenancy import tenant_create
from memoryos_site.database import embedded_database_url

REPO = Path(settings.BASE_DIR)
LOCUSTFILE = REPO / "evaluation" / "locustfile.py"
START_TIMEOUT = 120
EXPORT_SETTLE_TIMEOUT = 90  # seconds the worker gets after the load to finish the exports asked for during it
PERCENTILES = ("50%", "95%", "99%")


@dataclass
class LoadReport:
    """What one run measured and what its checks found; `problems` empty means it passed."""

    users: int
    duration_s: int
    requests: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    server_errors: int = 0
    endpoints: list[dict] = field(default_factory=list)
    acknowledged_turns: int = 0
    erased_users: int = 0
    exports: int = 0
    exports_done: int = 0
    exports_pending: int = 0  # not finished EXPORT_SETTLE_TIMEOUT after the load: the worker's backlog, not a loss
    queue_backlog: int = -1  # messages left in the Celery queue when the load stopped (-1: not a Redis broker)
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def redis_reachable(url: str) -> bool:
    """Whether something answers on the Redis URL's host and port."""
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), timeout=1).close()
    except OSError:
        return False
    return True


def database_url_of_connection() -> str:
    """The DATABASE_URL of the database this process uses (the embedded one's socket URL when it is embedded)."""
    db = connection.settings_dict
    if db["HOST"].startswith("/"):
        return embedded_database_url(db["HOST"], db["NAME"])
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


def free_port() -> int:
    """A local port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until(condition: Callable[[], bool], *, timeout: float) -> bool:
    """Poll `condition` every half second; whether it came true within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _answers(port: int) -> bool:
    """Whether something accepts connections on the local port."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


@contextmanager
def _process(command: list[str], *, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """A child process logging to `log`, stopped with SIGTERM (then killed) on exit."""
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _child_env(*, database_url: str, broker_url: str, llm_url: str, out: Path) -> dict[str, str]:
    """The environment of every child: this database, the Redis broker, the fake LLM for chat and embeddings."""
    dropped = {"DATABASE_URL", "CELERY_BROKER_URL", "PORT", "DJANGO_ALLOW_ASYNC_UNSAFE", "CELERY_TASK_ALWAYS_EAGER"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        DJANGO_SETTINGS_MODULE="memoryos_site.settings",
        PYTHONUNBUFFERED="1",
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        CACHE_URL=broker_url,  # the rate limit counts shared by the workers, as in production
        API_RATE_LIMIT="1000000/min",  # one token drives every simulated client; the limit is not under test
        LLM_BASE_URL=llm_url,
        LLM_API_KEY="fake",
        LLM_MODEL="fake-load-model",
        EMBEDDING_BACKEND="openai",  # the fake's hashed vectors: five processes cannot each load a local model here
        EMBEDDING_MODEL="fake-load-embedding",
        EXPORT_DIR=str(out / "exports"),
        STATIC_ROOT=str(out / "static"),  # collected as a release collects them (manage.py collectstatic)
    )
    return env


def _servers(stack: ExitStack, env: dict[str, str], out: Path, port: int) -> None:
    """gunicorn with 4 workers, one Celery worker (2 processes) and beat; returns once the site answers."""
    python = sys.executable
    gunicorn = [python, "-m", "gunicorn", "memoryos_site.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "4"]
    gunicorn += ["--timeout", "120", "--access-logfile", "-"]
    gunicorn += ["--logger-class", "memoryos_site.access_log.GunicornLogger"]
    worker = [python, "-m", "celery", "-A", "memoryos_site", "worker", "-l", "info", "--concurrency", "2"]
    worker += ["--without-gossip", "--without-mingle"]
    beat = [python, "-m", "celery", "-A", "memoryos_site", "beat", "-l", "info", "-s", str(out / "celerybeat-schedule")]
    with (out / "collectstatic.log").open("w") as log:  # the hashed, compressed files pages link, as in production
        collect = [python, "manage.py", "collectstatic", "--no-input", "-v", "0"]
        subprocess.run(collect, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, check=True)
    stack.enter_context(_process(worker, env=env, log=out / "worker.log"))
    stack.enter_context(_process(beat, env=env, log=out / "beat.log"))
    site = stack.enter_context(_process(gunicorn, env=env, log=out / "gunicorn.log"))
    # the master listens before its workers have booted: the warm-up that follows waits for them
    started = _wait_until(lambda: _answers(port) or site.poll() is not None, timeout=START_TIMEOUT)
    if not started or site.poll() is not None:
        raise RuntimeError(f"gunicorn did not start: see {out / 'gunicorn.log'}")


def _warm_up(host: str, token: str) -> None:
    """A few rounds of every kind of request from 8 threads, so the figures are not those of cold workers."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def send(path: str, body: dict | None) -> None:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{host}/api/v1{path}", data=data, headers=headers)
        try:
            urllib.request.urlopen(request, timeout=120).close()
        except urllib.error.HTTPError:
            pass  # an answer is all a warm-up needs; the run itself checks the codes

    def rounds(n: int) -> None:
        who = {"user": f"warm-up-{n}", "assistant": "ava"}
        for _ in range(3):
            send("/chat/", {**who, "message": "Hello there, I like tea."})
            send("/turns/", {**who, "user_message": "I like tea.", "assistant_reply": "Noted."})
            send("/retrieve/", {**who, "query": "tea"})
            for path in ("/pages/", "/segments/", "/knowledge/"):
                send(path, None)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(rounds, range(8)))


def _locust(env: dict[str, str], *, host: str, users: int, duration: int, out: Path) -> None:
    """locust headless: `users` chat sessions plus the governance user, all started within ten seconds."""
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", host]
    command += ["-u", str(users + 1), "-r", str(max(1, (users + 1) // 10)), "-t", f"{duration}s"]
    command += ["--stop-timeout", "30", "--csv", str(out / "locust"), "--only-summary", "--exit-code-on-error", "0"]
    with (out / "locust.log").open("w") as log:
        subprocess.run(command, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, check=True)


def _run_setup(tenant_slug: str) -> tuple[Tenant, str]:
    """The run's own tenant (kept afterwards, for a look in the console) and an API token with every scope."""
    tenant = tenant_create(slug=tenant_slug, name="Load test")
    token = api_token_create(
        tenant=tenant, name="load test", scopes="read,write,govern", actor=Actor.system("load_test")
    ).secret
    return tenant, token


def load_run(*, users: int, duration: int, broker_url: str, out: Path, database_url: str = "") -> LoadReport:
    """Run the load test and its checks; writes out/report.json and returns the report."""
    out.mkdir(parents=True, exist_ok=True)
    tenant, token = _run_setup(f"load-{uuid.uuid4().hex[:8]}")
    log = out / "requests.jsonl"
    log.unlink(missing_ok=True)
    port = free_port()
    with ExitStack() as stack:
        llm_url = stack.enter_context(fake_llm_server())
        env = _child_env(
            database_url=database_url or database_url_of_connection(), broker_url=broker_url, llm_url=llm_url, out=out
        )
        _servers(stack, env, out, port)
        _warm_up(f"http://127.0.0.1:{port}", token)
        locust_env = {**env, "LOAD_TOKEN": token, "LOAD_LOG": str(log)}
        _locust(locust_env, host=f"http://127.0.0.1:{port}", users=users, duration=duration, out=out)
        load_average = os.getloadavg()
        backlog = _queue_length(broker_url)
        _wait_until(lambda: _exports_settled(tenant), timeout=EXPORT_SETTLE_TIMEOUT)  # the checks report the rest
    report = LoadReport(users=users, duration_s=duration, load_average=load_average, queue_backlog=backlog)
    _read_stats(report, out / "locust_stats.csv")
    _check(report, tenant, [json.loads(line) for line in log.read_text().splitlines() if line.strip()])
    (out / "report.json").write_text(report.as_json())
    return report


def _queue_length(broker_url: str) -> int:
    """How many task messages wait in the default Celery queue of a Redis broker."""
    import redis

    try:
        return int(redis.Redis.from_url(broker_url).llen("celery"))
    except redis.RedisError:
        return -1


def _exports_settled(tenant: Tenant) -> bool:
    """Whether no export of the run's tenant is still waiting or building."""
    pending = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.RETRYING)
    return not ExportJob.objects.filter(tenant=tenant, status__in=pending).exists()


def _read_stats(report: LoadReport, path: Path) -> None:
    """p50/p95/p99 (ms), counts and failures per endpoint from locust's CSV."""
    with path.open() as stats:
        for row in csv.DictReader(stats):
            if row["Name"] == "Aggregated":
                continue
            report.endpoints.append(
                {
                    "endpoint": row["Name"],
                    "requests": int(row["Request Count"]),
                    "failures": int(row["Failure Count"]),
                    **{f"p{p[:-1]}_ms": float(row[p]) for p in PERCENTILES},
                }
            )


def _check(report: LoadReport, tenant: Tenant, entries: list[dict]) -> None:
    """No 5xx; every acknowledged turn stored exactly once as its page, or gone with its erased end user."""
    statuses = Counter(str(e["status"]) for e in entries if e["kind"] == "request")
    report.requests = sum(statuses.values())
    report.status_counts = dict(sorted(statuses.items()))
    report.server_errors = sum(n for code, n in statuses.items() if int(code) >= 500)
    if report.server_errors:
        report.problems.append(f"{report.server_errors} answers were 5xx")
        report.problems += [
            f"{e['name']} answered {e['status']}: {e.get('failure') or '(no body)'}"
            for e in entries
            if e["kind"] == "request" and e["status"] >= 500
        ]
    gone = Counter(str(e["status"]) for e in entries if e["kind"] == "request" and e.get("gone"))
    expected = {"200", "201", "202", "409", "410"}
    unexpected = {c: n - gone[c] for c, n in statuses.items() if c not in expected and n > gone[c] and int(c) < 500}
    if unexpected:
        report.problems.append(f"unexpected answers: {unexpected}")
    erased = {e["user"] for e in entries if e["kind"] == "erasure" and e["status"] == 200}
    report.erased_users = len(erased)
    exports = {e["job"]: e["user"] for e in entries if e["kind"] == "export"}
    report.exports = len(exports)
    done = set(ExportJob.objects.filter(pk__in=exports, status=JobStatus.DONE).values_list("pk", flat=True))
    report.exports_done = len(done)
    failed = ExportJob.objects.filter(pk__in=exports, status=JobStatus.FAILED).values_list("pk", "error")
    report.problems += [f"the export {job} failed: {error}" for job, error in failed]
    report.exports_pending = sum(1 for job, user in exports.items() if job not in done and user not in erased)
    for e in entries:
        if e["kind"] == "gone" and e["user"] not in erased:
            report.problems.append(f"retrieval for {e['user']} answered 404, yet that end user was not erased")
        if e["kind"] == "replay_mismatch":
            report.problems.append(f"the key {e['key']} answered page {e['first']}, then page {e['second']}")
    acks = [e for e in entries if e["kind"] == "ack"]
    report.acknowledged_turns = len(acks)
    report.problems += _storage_problems(tenant, acks, erased)


def _storage_problems(tenant: Tenant, acks: list[dict], erased: set[str]) -> list[str]:
    """Each acknowledged turn's marker is in exactly its own page, or in none once its end user is erased."""
    problems = []
    for ack in acks:
        pages = Page.objects.filter(space__tenant=tenant, user_message__contains=ack["marker"])
        found = list(pages.values_list("pk", flat=True))
        if ack["user"] in erased:
            if found or EndUser.objects.filter(tenant=tenant, external_id=ack["user"]).exists():
                problems.append(f"{ack['endpoint']} page {ack['page_id']} of erased {ack['user']} is still stored")
        elif found != [ack["page_id"]]:
            problems.append(f"{ack['endpoint']} page {ack['page_id']} of {ack['user']} stored as {found}")
    return problems


def report_table(report: LoadReport) -> str:
    """The per-endpoint figures as a Markdown table."""
    lines = ["| Endpoint | Requests | Failures | p50 ms | p95 ms | p99 ms |", "|---|---:|---:|---:|---:|---:|"]
    for e in report.endpoints:
        lines.append(
            f"| `{e['endpoint']}` | {e['requests']} | {e['failures']} | {e['p50_ms']:.0f} | {e['p95_ms']:.0f} "
            f"| {e['p99_ms']:.0f} |"
        )
    return "\n".join(lines)
