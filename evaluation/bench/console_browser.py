"""The browser benchmark of the console's case view: how long a full user's page takes to be fully loaded in a real
Chromium, against gunicorn serving the collected static files as production does.

One synthetic full user (200 segments of about 30 pages, a full STM, 100 + 100 facts, profile versions, heat
history; evaluation.bench.data with the topic-structured fake vectors) in a fresh tenant, an admin operator of it,
and gunicorn on a free port. Each tab of the case view is loaded `loads` times in two ways: cold (a new browser
context: nothing cached, every static file downloaded) and warm (the same context: static files come from the
browser's cache, as for an operator going from user to user). A load's time is from the start of the navigation to
its load event, or to the heat chart being drawn for the mid-term tab with its chart open, whichever is later (the
chart needs plotly.js, which nothing else fetches). Tooling, not product.
"""

from __future__ import annotations

import os
import platform
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from evaluation.bench.data import Vectors, bench_tenant_delete, full_users_build
from evaluation.bench.fakes import BenchEmbedder
from evaluation.loadtest import _answers, _process, _wait_until, database_url_of_connection, free_port
from evaluation.scoring import percentiles
from memory.models import AuditEntry, EmbeddingState, Role, Tenant
from memory.services.tenancy import operator_create, tenant_create

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
START_TIMEOUT = 60.0
# The case view's tabs (their query strings) and what shows one is fully drawn, beyond the load event: the mid-term
# tab opened with its chart section open (`chart=open`), the only page that fetches plotly.js.
TABS = {
    "short-term": ("tab=short-term", ""),
    "mid-term": ("tab=mid-term", ""),
    "mid-term + chart": ("tab=mid-term&chart=open", "#user-heat .main-svg"),
    "long-term": ("tab=long-term", ""),
    "chats": ("tab=chats", ""),
}
GOAL_MS = 500
# ms from the navigation's start to its load event, or to the chart being drawn if that is later
LOADED_JS = """(selector) => {
  const nav = performance.getEntriesByType("navigation")[0];
  const drawn = selector ? performance.now() : 0;
  const bytes = [nav, ...performance.getEntriesByType("resource")].reduce((sum, e) => sum + e.transferSize, 0);
  return {loaded: Math.max(nav.loadEventEnd, drawn), server: nav.responseStart - nav.requestStart, bytes: bytes};
}"""


@dataclass(frozen=True)
class ConsoleBenchOptions:
    loads: int = 20
    workers: int = 2
    seed: int = 7
    keep: bool = False
    out: Path = Path("var/console-bench")


def console_bench(options: ConsoleBenchOptions) -> dict:
    """Build the user, serve, measure every tab cold and warm; delete the tenant again unless `keep`.

    Side effects: a benchmark tenant in the database for the run, collected static files under `out`/static.
    """
    from playwright.sync_api import sync_playwright

    slug = f"console-bench-{timezone.now():%Y%m%d-%H%M%S}"
    tenant = tenant_create(slug=slug, name=f"Console benchmark {slug}")
    password = secrets.token_urlsafe(16)
    try:
        end_user_id, build_seconds = _build(tenant, options.seed)
        operator_create(username=f"{slug}-admin", password=password, tenant=tenant, role=Role.ADMIN)
        with ExitStack() as stack:
            base = _serve(stack, options)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                url = f"/console/{slug}/users/{end_user_id}/"
                tabs = _measure(browser, base, url, f"{slug}-admin", password, options.loads)
                browser.close()
    finally:
        if not options.keep:
            _tenant_delete(tenant)
    return _report(tabs, options, build_seconds)


def _build(tenant: Tenant, seed: int) -> tuple[int, float]:
    started = time.perf_counter()
    state = EmbeddingState.objects.order_by("id").first()
    name = state.model if state else f"local:{settings.EMBEDDING_MODEL}"
    vectors = Vectors(BenchEmbedder(name=name, dimension=state.dimension if state else 384, seed=seed))
    assistant = tenant.assistants.get(external_id="ava")
    [user] = full_users_build(
        tenant=tenant, assistant=assistant, count=1, vectors=vectors, seed=seed, now=timezone.now()
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would give a long-lived database
    return user.end_user_id, time.perf_counter() - started


def _serve(stack: ExitStack, options: ConsoleBenchOptions) -> str:
    """gunicorn as in production (DEBUG off, collected static files behind whitenoise); its base URL."""
    static_root = (options.out / "static").resolve()
    with override_settings(STATIC_ROOT=static_root):  # compressed copies are reused from the last run
        call_command("collectstatic", interactive=False, verbosity=0)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "PORT", "DEBUG"}}
    env.update(
        DJANGO_SETTINGS_MODULE="memoryos_site.settings",
        DATABASE_URL=database_url_of_connection(),
        STATIC_ROOT=str(static_root),
        STATIC_COLLECTED="true",
        SESSION_COOKIE_SECURE="false",  # plain HTTP on 127.0.0.1
        CSRF_COOKIE_SECURE="false",
    )
    command = [sys.executable, "-m", "gunicorn", "memoryos_site.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(options.workers), "--timeout", "120"]
    site = stack.enter_context(_process(command, env=env, log=options.out / "gunicorn.log"))
    started = _wait_until(lambda: _answers(port) or site.poll() is not None, timeout=START_TIMEOUT)
    if not started or site.poll() is not None:
        raise RuntimeError(f"gunicorn did not start: see {options.out / 'gunicorn.log'}")
    return f"http://127.0.0.1:{port}"


@contextmanager
def _context(browser, base: str, state=None) -> Iterator:
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900}, storage_state=state)
    context.set_default_timeout(90_000)  # plotly.js on a loaded 2-core machine can take tens of seconds
    try:
        yield context
    finally:
        context.close()


def _log_in(browser, base: str, username: str, password: str) -> dict:
    """The logged-in browser state (the session cookie), through the real login form."""
    with _context(browser, base) as context:
        tab = context.new_page()
        tab.goto("/accounts/login/")
        tab.fill("input[name=username]", username)
        tab.fill("input[name=password]", password)
        with tab.expect_navigation():
            tab.click("button[type=submit]")
        if "/accounts/login/" in tab.url:
            raise RuntimeError(f"the benchmark operator {username} could not log in")
        return context.storage_state()


def _load(tab, path: str, selector: str) -> dict:
    response = tab.goto(path, wait_until="load")
    if response is None or response.status != 200:
        raise RuntimeError(f"{path} answered {response.status if response else 'nothing'}")
    if not response.url.endswith(path):  # a redirect (to the login page): the timing would be of another page
        raise RuntimeError(f"{path} led to {response.url}")
    if selector:
        tab.wait_for_selector(selector)
    return tab.evaluate(LOADED_JS, selector)


def _measure(browser, base: str, url: str, username: str, password: str, loads: int) -> dict:
    state = _log_in(browser, base, username, password)
    results = {}
    for tab_name, (query, selector) in TABS.items():
        path = f"{url}?{query}"
        cold = []
        for _ in range(loads):
            with _context(browser, base, state) as context:
                cold.append(_load(context.new_page(), path, selector))
        with _context(browser, base, state) as context:
            tab = context.new_page()
            _load(tab, path, selector)  # fills the browser's cache
            warm = [_load(tab, path, selector) for _ in range(loads)]
        results[tab_name] = {"cold": _figures(cold), "warm": _figures(warm)}
    return results


def _figures(samples: list[dict]) -> dict:
    return {
        "loaded_ms": percentiles([s["loaded"] for s in samples], (50, 95)),
        "server_ms": percentiles([s["server"] for s in samples], (50, 95)),
        "transferred_kb": round(max(s["bytes"] for s in samples) / 1024, 1),
        "samples": len(samples),
    }


def _tenant_delete(tenant: Tenant) -> None:
    """The benchmark tenant and everything in it, its audit entries too (the trail is append-only for the product;
    the maintenance setting that its guard honours lets this tooling remove a benchmark's trail)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL memoryos.audit_maintenance = 'on'")
            cursor.execute(f"DELETE FROM {AuditEntry._meta.db_table} WHERE tenant_id = %s", [tenant.pk])
        bench_tenant_delete(tenant=tenant)


def _report(tabs: dict, options: ConsoleBenchOptions, build_seconds: float) -> dict:
    return {
        "tabs": tabs,
        "goal_ms": GOAL_MS,
        "goal_met": tabs["short-term"]["cold"]["loaded_ms"]["p95"] <= GOAL_MS,  # the page as it opens
        "loads": options.loads,
        "gunicorn_workers": options.workers,
        "build_seconds": round(build_seconds, 1),
        "user": "1 full user: 200 segments (~30 pages each), full STM, 100 + 100 facts, profile, heat history",
        "browser": CHROMIUM,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "generated_at": timezone.now().isoformat(timespec="seconds"),
        "chromium_version": _chromium_version(),
    }


def _chromium_version() -> str:
    try:
        return subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
