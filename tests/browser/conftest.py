"""A real Chromium driven by Playwright against the live server.

Never `playwright install` (it downloads a browser and fails offline): we launch Debian's /usr/bin/chromium.
Without Chromium the browser tests skip with a clear reason, except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def chromium():
    """Chromium for one test module. Not for the session: Playwright's sync API keeps an event loop running in this
    thread while it is started, and tests after the browser tests (the MCP clients, console_bench) run their own."""
    if not Path(CHROMIUM).exists():
        message = f"Chromium not found at {CHROMIUM}: install Debian's chromium (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " — CI must run the browser tests")
        pytest.skip(message)
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, live_server):
    """A fresh browser context (own cookies) on the live server; `page.goto(path)` takes paths.

    Fails the test if the browser reports anything the Content-Security-Policy blocked.
    """
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    tab = context.new_page()
    blocked: list[str] = []
    tab.on("console", lambda message: blocked.append(message.text) if "Content Security Policy" in message.text else 0)
    yield tab
    context.close()
    assert blocked == [], blocked


@pytest.fixture
def screenshot():
    """Save a screenshot under var/screenshots/<name>.png and return its path."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(tab, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        tab.screenshot(path=str(path), full_page=True)
        return path

    return take


def held_request(tab, held: list, timeout_ms: int = 10_000):
    """The first request a route handler holds in `held`, once the browser has sent it.

    Showing a pending message and sending it are two steps in the page's script, and the sync API runs
    route handlers only while it waits on the browser: a test must wait for the hold, not assume it.
    """
    waited = 0
    while not held:
        assert waited < timeout_ms, f"no request was held within {timeout_ms} ms"
        tab.wait_for_timeout(25)
        waited += 25
    return held.pop(0)


def log_in(tab, username: str, password: str) -> None:
    """Log in through the real login form."""
    tab.goto("/accounts/login/")
    tab.fill("input[name=username]", username)
    tab.fill("input[name=password]", password)
    tab.click("button[type=submit], input[type=submit]")
    tab.wait_for_load_state()
