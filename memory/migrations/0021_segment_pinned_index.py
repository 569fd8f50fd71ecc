"""An index of each space's pinned segments, which retrieval shows on every turn (issue 14).

Without it the read of the segments a result shows walked all of a space's segments (200 at full memory).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0020_knowledge_pinned_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="segment",
            index=models.Index(condition=models.Q(("pinned", True)), fields=["space"], name="segment_space_pinned"),
        ),
    ]
