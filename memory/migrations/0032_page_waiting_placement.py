"""An index of the mid-term pages that wait for placement, built without locking writes (CREATE INDEX
CONCURRENTLY): a turn that overflows STM counts them, and that count read a space's thousands of entries in the
space and segment indexes (7.7 ms for a user outside PostgreSQL's cache) where it now reads a few."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memory", "0031_webhooks")]

    operations = [
        AddIndexConcurrently(
            model_name="page",
            index=models.Index(
                condition=models.Q(("segment__isnull", True), ("tier", "mtm")),
                fields=["space", "seq"],
                name="page_waiting_placement",
            ),
        ),
    ]
