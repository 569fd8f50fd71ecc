"""Write every page row again after migration 0022, so that its texts come back from TOAST into the row.

An unchanged value keeps its TOAST pointer when a row is updated, so each text is given again as a new value
(`|| ''`), which the toaster then places under the new target. Batch by batch, each committed on its own (a large
installation is not locked for the whole rewrite), as migration 0017 did; safe to run again after a failure.
"""

from django.db import migrations

BATCH = 5_000
REWRITE = """
UPDATE memory_page
SET user_message = user_message || '', assistant_reply = assistant_reply || '', chain_summary = chain_summary || ''
WHERE id >= %s AND id < %s
"""


def _rewrite_pages(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(min(id), 0), coalesce(max(id), -1) FROM memory_page")
        low, high = cursor.fetchone()
        for start in range(low, high + 1, BATCH):
            cursor.execute(REWRITE, [start, start + BATCH])


class Migration(migrations.Migration):
    atomic = False  # the rewrite commits batch by batch

    dependencies = [
        ("memory", "0022_page_rows_whole"),
    ]

    operations = [
        migrations.RunPython(_rewrite_pages, migrations.RunPython.noop),
    ]
