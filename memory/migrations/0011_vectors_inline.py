"""Keep what retrieval scans inline in the row (the vector, and a page's full-text vector), not in TOAST.

pgvector's `vector` type is stored EXTERNAL by default: a page row with two 384-d vectors (~3.8 kB) is over
PostgreSQL's 2 kB TOAST threshold, so both vectors were moved out of line and the exact scan of a space's ~6,000
pages did four buffer reads per row (heap, TOAST index, TOAST heap). MAIN keeps `embedding` in the row (moved out
only as a last resort) while `topic_embedding` (read only when placing a page) and the texts still go out of line.
The same holds for the page's `search` tsvector, which the full-text channel reads for every page of the space it
filters and ranks: one buffer a row instead of four (see docs/decisions/0005-rows-kept-whole.md).

Rows stored before this migration keep their out-of-line values until rewritten, which the second step does in
batches: a value is re-stored only when it is new, so the rewrite casts the vector through real[], and assigning a
page's message makes PostgreSQL compute its generated `search` column afresh.
"""

from django.db import migrations

TABLES = ("memory_page", "memory_segment", "memory_knowledgeentry")
INLINE = [(table, "embedding") for table in TABLES] + [("memory_page", "search")]
BATCH = 5_000
REWRITE = {
    "memory_page": "embedding = (embedding::real[])::vector, user_message = user_message",
    "memory_segment": "embedding = (embedding::real[])::vector",
    "memory_knowledgeentry": "embedding = (embedding::real[])::vector",
}


def _rewrite(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"SELECT coalesce(min(id), 0), coalesce(max(id), -1) FROM {table}")
            low, high = cursor.fetchone()
            for start in range(low, high + 1, BATCH):
                cursor.execute(
                    f"UPDATE {table} SET {REWRITE[table]} WHERE id >= %s AND id < %s", [start, start + BATCH]
                )


class Migration(migrations.Migration):
    atomic = False  # the rewrite commits batch by batch on a large installation

    dependencies = [
        ("memory", "0010_page_search"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE MAIN" for table, column in INLINE],
            reverse_sql=[
                f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE {'EXTENDED' if column == 'search' else 'EXTERNAL'}"
                for table, column in INLINE
            ],
        ),
        migrations.RunPython(_rewrite, migrations.RunPython.noop),
    ]
