"""Reads from a real streaming standby of the test database (tests/foundation/replica_server.py): the console reads
it, an operator who wrote reads the primary for a while, and a standby that is down or lags too far is left aside.

A write the standby has not replayed yet is how a test tells where a page read from: replay is paused, the primary
changes, and a page that does not show the change came from the standby."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.base import DatabaseWrapper
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memoryos_site.database import embedded_server_ensure
from memoryos_site.replica_health import health_forget
from memoryos_site.routers import PRIMARY_COOKIE, REPLICA
from tests import builders
from tests.foundation.replica_server import Standby

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=[DEFAULT_DB_ALIAS, REPLICA]),
    pytest.mark.slow,
    pytest.mark.process,  # a standby PostgreSQL
]

PIN_CHIP = b'class="chip chip-pin"'


@pytest.fixture(scope="module")
def standby(django_db_setup):
    """A streaming standby of the embedded primary, made once the test database exists. It is removed when this
    module's tests are done (or fail), so that it does not replay the rest of the suite's writes."""
    primary = connections[DEFAULT_DB_ALIAS].settings_dict
    if "EMBEDDED_PGDATA" not in primary:
        pytest.skip("a real standby is made only beside the embedded PostgreSQL, and DATABASE_URL is set")
    pgdata = Path(primary["EMBEDDED_PGDATA"])
    server = Standby(pgdata, embedded_server_ensure(pgdata))
    if reason := server.unavailable_because():
        pytest.skip(f"no real standby: {reason}")
    try:
        server.create()
        yield server
    finally:
        server.remove()


@pytest.fixture
def on_standby(standby, settings):
    """The `replica` alias on the standby's copy of the test database, with a lag limit that a paused replay stays
    under unless a test lowers it; the alias, the health check and a stopped standby are restored after."""
    mirror = connections[REPLICA]
    primary = connections[DEFAULT_DB_ALIAS].settings_dict
    connections[REPLICA] = DatabaseWrapper(standby.database_settings(primary), REPLICA)
    settings.DATABASE_REPLICA_URL = "postgres://standby/"  # only its presence matters: the alias is set above
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 300
    health_forget()
    yield standby
    connections[REPLICA].close()
    connections[REPLICA] = mirror
    health_forget()
    if not standby.running:
        standby.start()


def users_page(tenant) -> str:
    return reverse("console:users", args=[tenant.slug])


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def replica_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "memoryos_site.replica_health" and r.levelno >= 30]


def test_the_console_reads_the_standby_so_a_new_user_shows_once_replayed(supervisor_user, tenant, on_standby):
    operator = logged_in(supervisor_user)
    on_standby.catch_up()
    with on_standby.replay_paused():
        builders.end_user(external_id="zed-the-new-user")
        while_paused = operator.get(users_page(tenant))
    on_standby.catch_up()
    replayed = operator.get(users_page(tenant))
    assert while_paused.status_code == 200 and b"zed-the-new-user" not in while_paused.content
    assert b"zed-the-new-user" in replayed.content


def test_the_operator_who_pinned_a_segment_sees_it_at_once_and_another_once_replayed(
    admin_user, supervisor_user, tenant, on_standby
):
    ann = builders.end_user()
    segment = builders.segment_with_pages(builders.space_of(ann), summary="hiking", messages=["I hike."])
    editor, other = logged_in(admin_user), logged_in(supervisor_user)
    page = reverse("console:user", args=[tenant.slug, ann.pk]) + "?tab=mid-term"
    on_standby.catch_up()
    with on_standby.replay_paused():
        pin = editor.post(reverse("console:action", args=[tenant.slug, "segment", segment.pk, "pin"]), {"reason": "ok"})
        seen_by_editor, seen_by_other = editor.get(page), other.get(page)
    on_standby.catch_up()
    assert pin.status_code in (200, 302) and PIN_CHIP not in seen_by_other.content
    assert PIN_CHIP in seen_by_editor.content and PRIMARY_COOKIE in pin.cookies
    assert PIN_CHIP in other.get(page).content


def test_a_stopped_standby_sends_the_console_to_the_primary_with_a_warning(supervisor_user, tenant, on_standby, caplog):
    operator = logged_in(supervisor_user)
    on_standby.catch_up()
    with CaptureQueriesContext(connections[REPLICA]) as on_replica:
        before = operator.get(users_page(tenant))
    assert before.status_code == 200 and on_replica.captured_queries  # read before the next request clears the log
    on_standby.stop()
    builders.end_user(external_id="zed-the-new-user")
    with_its_connection_gone = operator.get(users_page(tenant))  # the kept connection fails its check
    health_forget()
    at_the_next_check = operator.get(users_page(tenant))  # the periodic check finds no server
    for response in (with_its_connection_gone, at_the_next_check):
        assert response.status_code == 200 and b"zed-the-new-user" in response.content
    assert len(replica_warnings(caplog)) == 2


def test_a_standby_lagging_past_the_limit_sends_the_console_to_the_primary(
    supervisor_user, tenant, on_standby, settings, caplog
):
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 0
    operator = logged_in(supervisor_user)
    on_standby.catch_up()
    with on_standby.replay_paused():
        builders.end_user(external_id="zed-the-new-user")
        on_standby.receive_all()
        lagging = operator.get(users_page(tenant))
    assert lagging.status_code == 200 and b"zed-the-new-user" in lagging.content
    assert "lags the primary" in " ".join(replica_warnings(caplog))
