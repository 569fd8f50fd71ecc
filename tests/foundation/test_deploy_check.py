"""`manage.py check --deploy` is clean when the environment looks like production."""

from __future__ import annotations

import secrets

import pytest

from tests.foundation.processes import child_env, manage

pytestmark = pytest.mark.process  # each test runs manage.py as a process


def test_check_deploy_is_clean_with_production_settings():
    env = child_env(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(64),
        ALLOWED_HOSTS="example.com",
        SECURE_SSL_REDIRECT="true",
        SECURE_HSTS_SECONDS="31536000",
    )

    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_check_deploy_warns_when_production_runs_with_debug_on():
    env = child_env(DEBUG="true", SECRET_KEY=secrets.token_urlsafe(64), ALLOWED_HOSTS="example.com")

    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode != 0
    assert "security.W018" in result.stderr  # DEBUG must be off in deployment
