"""Security findings of issue 29, part A.

- A memory event kind, `hold_kept`: an automatic deletion a legal hold deferred.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0024_page_vectors_half_precision"),
    ]

    operations = [
        migrations.AlterField(
            model_name="memoryevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("stm_overflow", "Short-term overflow placed a page"),
                    ("segment_created", "Segment created"),
                    ("promotion", "Segment promoted to long-term memory"),
                    ("eviction", "Segment evicted from mid-term memory"),
                    ("knowledge_dropped", "Knowledge entry dropped (FIFO)"),
                    ("paused_drop", "Page dropped while memory was paused"),
                    ("hold_kept", "Deletion deferred: the end user is under legal hold"),
                ],
                max_length=20,
            ),
        ),
    ]
