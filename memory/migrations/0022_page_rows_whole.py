"""Keep a page's row whole: its texts in the row, not in TOAST (issue 14).

A page row is about 2.4 KB (the 1,536-byte embedding and the `tsvector`, both kept inline by migrations 0011 and
0016, plus the turn's texts); past PostgreSQL's default 2 KB threshold the toaster moved the texts (`user_message`,
`assistant_reply`, `chain_summary`) out of line, so reading a loaded page's text cost three TOAST lookups (index and
heap, about 13 buffers) on top of the row: four times the buffers for the pages a retrieval loads, and as many
scattered reads when they are not cached (see docs/decisions/0005-rows-kept-whole.md). `toast_tuple_target` = 8160 (PostgreSQL's largest) leaves a row
whole while it fits a heap page; only a turn of several kilobytes of text is still compressed, then moved out.

It applies to rows written from now on; migration 0023 writes the existing ones again.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0021_segment_pinned_index"),
    ]

    operations = [
        migrations.RunSQL(
            sql="ALTER TABLE memory_page SET (toast_tuple_target = 8160)",
            reverse_sql="ALTER TABLE memory_page RESET (toast_tuple_target)",
        ),
    ]
