"""The one-bit column `embedding_bits` leaves the page and passage tables (issue 33).

Migration 0034 moved the vector channel's first pass to two-bit codes and dropped the one-bit indexes, but kept the
column so that processes of the release before it, which name it, went on answering until they restarted. This
release's code names it nowhere. Being a stored generated column, it was still computed (`binary_quantize`) and
written, 48 bytes a row, with every page and passage stored.

Dropping a column only marks it dropped in the catalogue: no table rewrite, a brief exclusive lock on each table.
`lock_timeout` keeps that lock from queueing every read behind a long transaction; a migration that times out may be
run again. Rows keep the dropped bytes until they are next written; new rows are 48 bytes shorter. Going back adds the
column again as it was, which rewrites both tables under that lock (run it in a maintenance window).
"""

from django.db import migrations

TABLES = ("memory_page", "memory_pagepassage")
LOCK_TIMEOUT = "SET LOCAL lock_timeout = '10s';"


def _column_dropped(table: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        f"{LOCK_TIMEOUT} ALTER TABLE {table} DROP COLUMN IF EXISTS embedding_bits",
        reverse_sql=f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS embedding_bits bit varying "
        "GENERATED ALWAYS AS (binary_quantize(embedding)) STORED",
    )


class Migration(migrations.Migration):
    dependencies = [("memory", "0034_two_bit_vector_codes")]

    operations = [_column_dropped(table) for table in TABLES]
