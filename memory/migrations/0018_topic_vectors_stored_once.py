"""A page's topic vector is stored only where it differs from the page's own vector (`Page.topic_vector`).

Clears every stored copy equal to `embedding` (MEMORY_TOPIC_VECTOR=page, the default, stored one for every placed
page: half of the pages' bytes at scale). Batch by batch, each committed on its own, like 0017; safe to run again.
The space goes back to PostgreSQL for new rows as VACUUM finds it (a VACUUM FULL returns it to the disk).
"""

from django.db import migrations

BATCH = 5_000


def _clear_copies(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(min(id), 0), coalesce(max(id), -1) FROM memory_page")
        low, high = cursor.fetchone()
        for start in range(low, high + 1, BATCH):
            cursor.execute(
                "UPDATE memory_page SET topic_embedding = NULL"
                " WHERE id >= %s AND id < %s AND topic_embedding IS NOT NULL AND topic_embedding = embedding",
                [start, start + BATCH],
            )


def _store_copies(apps, schema_editor):
    """Backwards: code before this migration reads `topic_embedding` alone, so a placed page gets its copy back."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_page SET topic_embedding = embedding"
            " WHERE topic_embedding IS NULL AND embedding IS NOT NULL AND segment_id IS NOT NULL"
        )


class Migration(migrations.Migration):
    atomic = False  # the clearing commits batch by batch

    dependencies = [
        ("memory", "0017_retrieval_pages_rewritten_inline"),
    ]

    operations = [
        migrations.RunPython(_clear_copies, _store_copies),
    ]
