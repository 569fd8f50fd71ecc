"""An index of each user's pinned facts, which retrieval reads on every turn (issue 14).

Without it the read walked all of a user's entries (200 at full memory) to find the few pinned ones.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0019_search_keys_per_space"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="knowledgeentry",
            index=models.Index(condition=models.Q(("pinned", True)), fields=["end_user"], name="knowledge_user_pinned"),
        ),
    ]
