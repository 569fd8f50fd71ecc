"""An unreachable database is one line that names the URL (password hidden), not a traceback."""

from __future__ import annotations

import pytest

from tests.foundation.processes import child_env, manage

UNREACHABLE = "postgres://u:secret@127.0.0.1:1/x"

pytestmark = pytest.mark.process  # each test runs manage.py as a process


def test_migrate_against_an_unreachable_server_fails_with_one_line():
    result = manage("migrate", env=child_env(DATABASE_URL=UNREACHABLE))

    assert result.returncode != 0
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    assert error.startswith("error: ")
    assert "postgres://u:***@127.0.0.1:1/x" in error
    assert "secret" not in error
    assert "Traceback" not in result.stdout + result.stderr


def test_bad_settings_values_are_named_in_the_error():
    result = manage("check", env=child_env(MEMORY_STM_CAPACITY="seven"))

    assert result.returncode != 0
    assert "MEMORY_STM_CAPACITY must be an integer, not 'seven'" in result.stderr
