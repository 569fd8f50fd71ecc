"""The page and passage tables are vacuumed once 1 % of their rows have changed or been added, not PostgreSQL's
20 %: the vector channel's first pass is an index-only scan, which reads a row's table page whenever that page is
not marked all-visible, and every turn, eviction and placement clears the mark on a table page shared with other
users' rows (docs/decisions/0021-pages-vacuumed-sooner.md). Setting storage parameters takes a lock that lets reads
and writes go on."""

from django.db import migrations

TABLES = ("memory_page", "memory_pagepassage")
SOONER = "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01"
DEFAULTS = "autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor"


class Migration(migrations.Migration):
    dependencies = [("memory", "0032_page_waiting_placement")]

    operations = [
        migrations.RunSQL(f"ALTER TABLE {table} SET ({SOONER})", reverse_sql=f"ALTER TABLE {table} RESET ({DEFAULTS})")
        for table in TABLES
    ]
