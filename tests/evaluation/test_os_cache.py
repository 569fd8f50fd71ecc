"""A warm bench phase reads the embedded database's files through the OS cache first, and says what it found."""

from __future__ import annotations

import pytest

from evaluation.bench.os_cache import database_files_read, page_table_read_us
from memory.services.turns import turn_record

pytestmark = pytest.mark.django_db


def test_a_warm_phase_reads_the_database_through_and_times_random_reads_before_and_after(settings, alice, assistant):
    if not settings.EMBEDDED_DATABASE:
        pytest.skip("the tests run against a server elsewhere (DATABASE_URL): its files are not on this machine")
    turn_record(end_user=alice, assistant=assistant, user_message="I moved to Leeds.", assistant_reply="Noted.")

    read = database_files_read(phase="proxy", seed=3)

    assert read["phase"] == "proxy" and "skipped" not in read
    assert read["gb_read"] > 0 and read["seconds"] >= 0
    assert read["read_us_before"] > 0 and read["read_us_after"] > 0
    assert page_table_read_us(seed=3) > 0  # the probe a phase's end takes again


def test_a_database_elsewhere_is_not_read_and_the_report_says_why(settings):
    settings.EMBEDDED_DATABASE = False

    read = database_files_read(phase="retrieval")

    assert read == {"phase": "retrieval", "skipped": read["skipped"]} and "not the embedded server" in read["skipped"]
    assert page_table_read_us() is None
