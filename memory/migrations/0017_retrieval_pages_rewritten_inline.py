"""Store every page row afresh after migration 0016, so its new `search` vector is kept inline (MAIN), not in TOAST.

Batch by batch, each batch committed on its own (a large installation is not locked for the whole rewrite);
assigning a page's message makes PostgreSQL compute its generated columns again. Safe to run again after a failure:
a rewritten row is rewritten once more, unchanged.
"""

from django.db import migrations

BATCH = 5_000


def _rewrite_pages(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(min(id), 0), coalesce(max(id), -1) FROM memory_page")
        low, high = cursor.fetchone()
        for start in range(low, high + 1, BATCH):
            cursor.execute(
                "UPDATE memory_page SET user_message = user_message WHERE id >= %s AND id < %s", [start, start + BATCH]
            )


class Migration(migrations.Migration):
    atomic = False  # the rewrite commits batch by batch

    dependencies = [
        ("memory", "0016_retrieval_bits_scoped_search"),
    ]

    operations = [
        migrations.RunPython(_rewrite_pages, migrations.RunPython.noop),
    ]
