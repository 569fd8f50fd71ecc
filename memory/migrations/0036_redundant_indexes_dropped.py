"""Six indexes that another index of the same table already serves leave the tables every turn writes (issue 33).

Each was kept up to date on every write of its table and read by no query that a remaining index does not serve as
well: a B-tree index serves any query on a prefix of its columns, in either direction.

- `memory_page`: the space's foreign-key index (page_seq_per_space, page_space_tier_seq and page_space_code lead with
  the space) and page_segment_seq, (segment, seq), where the planner always took the segment's own foreign-key index,
  a third of its size with a segment's 20-40 pages deduplicated (0 scans against 38,243 in a bench of 100 users).
  A page is written when it is recorded, when it leaves short-term memory, when it is placed and when its vector is
  set, each time into every index.
- `memory_chatreply`: the space's foreign-key index (one_reply_per_idempotency_key and reply_space_recent lead with the
  space). A reply is written twice a turn: claimed, then completed.
- `memory_auditentry`: the tenant's foreign-key index and audit_tenant_seq, (tenant, seq DESC), the mirror of the
  unique audit_seq_per_tenant, (tenant, seq). One entry or more a turn.
- `memory_enduser`: the tenant's foreign-key index (end_user_external_id_per_tenant and end_user_recent lead with the
  tenant). A turn moves the end user's last activity, which end_user_recent holds, so every index takes a new entry.

A foreign key's checks (when a space, a segment or a tenant is deleted) use any index that leads with the key's
column, so they keep theirs. The indexes are dropped CONCURRENTLY, so no table is locked against writes while they go;
going back builds them again the same way.
"""

from django.db import migrations, models

DROPPED = {
    "memory_page_space_id_53d5f5dd": "memory_page (space_id)",
    "page_segment_seq": "memory_page (segment_id, seq)",
    "memory_chatreply_space_id_01fed4f7": "memory_chatreply (space_id)",
    "memory_auditentry_tenant_id_051565da": "memory_auditentry (tenant_id)",
    "audit_tenant_seq": "memory_auditentry (tenant_id, seq DESC)",
    "memory_enduser_tenant_id_31e6c019": "memory_enduser (tenant_id)",
}


def _dropped(name: str, definition: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        f"DROP INDEX CONCURRENTLY IF EXISTS {name}",
        reverse_sql=f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {definition}",
    )


def _without_index(model: str, name: str, to: str, related_name: str) -> migrations.AlterField:
    field = models.ForeignKey(db_index=False, on_delete=models.CASCADE, related_name=related_name, to=to)
    return migrations.AlterField(model_name=model, name=name, field=field)


class Migration(migrations.Migration):
    atomic = False  # CREATE and DROP INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [("memory", "0035_one_bit_column_dropped")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[_dropped(name, definition) for name, definition in DROPPED.items()],
            state_operations=[
                migrations.RemoveIndex(model_name="auditentry", name="audit_tenant_seq"),
                migrations.RemoveIndex(model_name="page", name="page_segment_seq"),
                _without_index("auditentry", "tenant", "memory.tenant", "audit_entries"),
                _without_index("chatreply", "space", "memory.memoryspace", "replies"),
                _without_index("enduser", "tenant", "memory.tenant", "end_users"),
                _without_index("page", "space", "memory.memoryspace", "pages"),
            ],
        )
    ]
