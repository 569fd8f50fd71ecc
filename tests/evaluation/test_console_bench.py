"""console_bench: it builds a full user, serves it with gunicorn and the collected static files, and times every tab
of the user's console page in Chromium, then removes its tenant (the figures themselves are never asserted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.conf import global_settings
from django.core.management import call_command

from evaluation.bench.console_browser import CHROMIUM, TABS
from memory.models import AuditEntry, EndUser, Tenant

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_it_times_each_tab_cold_and_warm_and_removes_its_tenant(tmp_path, settings):
    # gunicorn checks the operator's password with the real hashers, not the tests' fast one
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"Chromium not found at {CHROMIUM}")
        pytest.skip(f"Chromium not found at {CHROMIUM}")

    call_command("console_bench", "--loads", "1", "--out", str(tmp_path))

    result = json.loads((tmp_path / "console-bench.json").read_text())
    assert list(result["tabs"]) == list(TABS)
    for figures in result["tabs"].values():
        for cache in ("cold", "warm"):
            assert figures[cache]["samples"] == 1 and figures[cache]["loaded_ms"]["p50"] > 0
    assert result["tabs"]["mid-term + chart"]["cold"]["transferred_kb"] > 1000  # plotly.js, compressed
    assert result["tabs"]["short-term"]["cold"]["transferred_kb"] < 200  # no plotly.js
    assert not Tenant.objects.filter(slug__startswith="console-bench").exists()
    assert not EndUser.objects.exists() and not AuditEntry.objects.exists()
