"""Migration 0036: the tables every turn writes keep no index that another index of theirs already serves, and every
foreign key a turn writes is still the leading column of an index (its checks and its lookups stay indexed)."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import AuditEntry, ChatReply, EndUser, Page
from tests.memory.migrating import latest, migrate

BEFORE = [("memory", "0035_one_bit_column_dropped")]
DROPPED = {
    "memory_page_space_id_53d5f5dd",
    "page_segment_seq",
    "memory_chatreply_space_id_01fed4f7",
    "memory_auditentry_tenant_id_051565da",
    "audit_tenant_seq",
    "memory_enduser_tenant_id_31e6c019",
}
# Each foreign key a turn writes, and the table it is written in.
KEYS = [
    (Page, "space_id"),
    (Page, "segment_id"),
    (ChatReply, "space_id"),
    (AuditEntry, "tenant_id"),
    (EndUser, "tenant_id"),
]


def indexes() -> dict[str, tuple[str, list[str]]]:
    """Every index of the tables a turn writes: its name → (table, its columns in order)."""
    found = {}
    with connection.cursor() as cursor:
        for model in (Page, ChatReply, AuditEntry, EndUser):
            table = model._meta.db_table
            for name, info in connection.introspection.get_constraints(cursor, table).items():
                if info["index"]:
                    found[name] = (table, info["columns"])
    return found


def leading(column: str, table: str) -> set[str]:
    return {name for name, (on, columns) in indexes().items() if on == table and columns[:1] == [column]}


@pytest.mark.django_db
def test_no_index_another_index_serves_is_kept_up_to_date_on_every_turn():
    assert DROPPED.isdisjoint(indexes())


@pytest.mark.django_db
@pytest.mark.parametrize(("model", "column"), KEYS, ids=lambda key: getattr(key, "__name__", key))
def test_every_foreign_key_a_turn_writes_still_leads_an_index(model, column):
    assert leading(column, model._meta.db_table)


@pytest.mark.slow  # migrates the test database back to before the migration and forward again
@pytest.mark.django_db(transaction=True)
def test_going_back_builds_the_indexes_again_and_coming_forward_drops_them():
    try:
        migrate(BEFORE)
        assert set(indexes()) >= DROPPED
        migrate(latest())
        assert DROPPED.isdisjoint(indexes())
    finally:
        migrate(latest())
