"""Read-replica routing: the console's GET pages read from the `replica` alias (here a TEST MIRROR of `default`,
a second connection to the same database); writes, reads in a transaction and everything else use `default`."""

from __future__ import annotations

import pytest
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.models import EndUser, Segment
from memoryos_site.replica_health import LAG_SQL, health_forget
from memoryos_site.routers import PRIMARY_COOKIE, REPLICA, PrimaryReplicaRouter, read_alias
from tests import builders

pytestmark = pytest.mark.django_db(transaction=True, databases=[DEFAULT_DB_ALIAS, REPLICA])


@pytest.fixture
def replica_on(settings):
    settings.DATABASE_REPLICA_URL = "postgres://replica.invalid/memoryos"  # only its presence matters here
    health_forget()
    yield
    health_forget()


def captured(alias: str) -> CaptureQueriesContext:
    return CaptureQueriesContext(connections[alias])


def memory_tables(context: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in context.captured_queries if '"memory_' in q["sql"]]


def test_the_console_user_page_reads_memory_from_the_replica(client, admin_user, tenant, replica_on):
    ann = builders.end_user(external_id="ann")
    builders.segment_with_pages(builders.space_of(ann), summary="hiking", messages=["I hike."])
    client.force_login(admin_user)
    with captured(DEFAULT_DB_ALIAS) as primary, captured(REPLICA) as replica:
        response = client.get(reverse("console:user", args=[tenant.slug, ann.pk]) + "?tab=mid-term")
    assert response.status_code == 200 and b"hiking" in response.content
    assert any("memory_segment" in sql for sql in memory_tables(replica))
    assert not any(sql.lstrip().startswith("SELECT") and "memory_segment" in sql for sql in memory_tables(primary))


def test_without_a_replica_configured_the_console_reads_the_primary(client, admin_user, tenant):
    ann = builders.end_user(external_id="ann")
    client.force_login(admin_user)
    with captured(REPLICA) as replica:
        response = client.get(reverse("console:user", args=[tenant.slug, ann.pk]))
    assert response.status_code == 200 and replica.captured_queries == []


def test_a_console_post_and_the_end_users_pages_stay_on_the_primary(client, admin_user, tenant, replica_on):
    ann = builders.end_user(external_id="ann", username="ann", password="a-long-test-password")
    segment = builders.segment_with_pages(builders.space_of(ann), summary="hiking", messages=["I hike."])
    client.force_login(admin_user)
    with captured(REPLICA) as replica:
        url = reverse("console:action", args=[tenant.slug, "segment", segment.pk, "pin"])
        pinned = client.post(url, {"reason": "the user asked us to keep it"})
        client.force_login(EndUser.objects.get(pk=ann.pk).account)
        assert client.get(reverse("chat:memory", args=["ava"])).status_code == 200
    assert pinned.status_code in (200, 302) and Segment.objects.get(pk=segment.pk).pinned
    assert replica.captured_queries == []


def test_reads_inside_a_transaction_use_the_primary_even_with_a_replica(replica_on):
    assert read_alias() == REPLICA
    with transaction.atomic():
        assert read_alias() == DEFAULT_DB_ALIAS


def test_writes_and_migrations_go_to_the_primary_and_objects_of_both_may_relate(tenant):
    router = PrimaryReplicaRouter()
    space = builders.space_of(builders.end_user(external_id="ann"))
    from_replica = Segment.objects.using(REPLICA).filter(space=space).first() or Segment(space=space)
    from_replica._state.db = REPLICA
    assert router.db_for_write(Segment) == DEFAULT_DB_ALIAS
    assert router.allow_migrate(DEFAULT_DB_ALIAS, "memory") and not router.allow_migrate(REPLICA, "memory")
    assert router.allow_relation(from_replica, space) is True
    assert router.db_for_read(Segment, instance=from_replica) == REPLICA


def test_the_replicas_lag_is_asked_once_for_several_console_pages(client, admin_user, tenant, replica_on):
    client.force_login(admin_user)
    with captured(REPLICA) as replica:
        for _ in range(3):
            assert client.get(reverse("console:users", args=[tenant.slug])).status_code == 200
    assert [q["sql"] for q in replica.captured_queries].count(LAG_SQL) == 1


def test_an_operators_post_pins_their_console_reads_to_the_primary_for_a_while(
    client, admin_user, tenant, replica_on, settings
):
    segment = builders.segment_with_pages(builders.space_of(builders.end_user()), summary="hiking", messages=["Hi"])
    client.force_login(admin_user)
    pin = client.post(reverse("console:action", args=[tenant.slug, "segment", segment.pk, "pin"]), {"reason": "ok"})
    with captured(REPLICA) as while_pinned:
        client.get(reverse("console:users", args=[tenant.slug]))
    client.cookies[PRIMARY_COOKIE] = "1"  # a window that has ended
    with captured(REPLICA) as after:
        client.get(reverse("console:users", args=[tenant.slug]))
    assert int(pin.cookies[PRIMARY_COOKIE]["max-age"]) == settings.DATABASE_REPLICA_STICKY_SECONDS
    assert while_pinned.captured_queries == [] and after.captured_queries


def test_an_audited_read_pins_no_one_to_the_primary(client, admin_user, tenant, replica_on):
    ann = builders.end_user()
    client.force_login(admin_user)
    response = client.get(reverse("console:profile", args=[tenant.slug, ann.pk]))
    assert response.status_code == 200 and PRIMARY_COOKIE not in response.cookies


def test_without_a_replica_no_one_is_pinned(client, admin_user, tenant):
    segment = builders.segment_with_pages(builders.space_of(builders.end_user()), summary="hiking", messages=["Hi"])
    client.force_login(admin_user)
    pin = client.post(reverse("console:action", args=[tenant.slug, "segment", segment.pk, "pin"]), {"reason": "ok"})
    assert pin.status_code in (200, 302) and PRIMARY_COOKIE not in pin.cookies
