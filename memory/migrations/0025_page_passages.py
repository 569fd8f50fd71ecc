"""Passages of long pages (issue 28): overlapping windows of a page's text, each with its own half-precision vector.

The foreign keys to the page and the space cascade in PostgreSQL (`ON DELETE CASCADE`), while Django does nothing
on delete: every path that deletes pages or spaces (forget, erase, retention, import) takes their passages with it,
and no delete sends one more statement. Referential actions are never deferred, so keeping Django's `DEFERRABLE
INITIALLY DEFERRED` is harmless.
"""

import django.db.models.deletion
from django.db import migrations, models

import memory.models.tiers

CASCADE_IN_THE_DATABASE = """
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT conname, pg_get_constraintdef(oid) AS definition FROM pg_constraint
             WHERE conrelid = 'memory_pagepassage'::regclass AND contype = 'f' LOOP
        EXECUTE format('ALTER TABLE memory_pagepassage DROP CONSTRAINT %I', c.conname);
        EXECUTE format('ALTER TABLE memory_pagepassage ADD CONSTRAINT %I %s', c.conname,
                       replace(c.definition, ' DEFERRABLE', ' ON DELETE CASCADE DEFERRABLE'));
    END LOOP;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0024_page_vectors_half_precision"),
    ]

    operations = [
        migrations.CreateModel(
            name="PagePassage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("start", models.IntegerField()),
                ("end", models.IntegerField()),
                ("embedding", memory.models.tiers.HalfVectorField()),
                (
                    "page",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.DO_NOTHING, related_name="passages", to="memory.page"
                    ),
                ),
                (
                    "space",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to="memory.memoryspace"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["space", "page"], name="passage_space_page")],
                "constraints": [
                    models.UniqueConstraint(fields=("page", "start"), name="passage_start_per_page"),
                    models.CheckConstraint(
                        condition=models.Q(("end__gt", models.F("start")), ("start__gte", 0)), name="passage_span"
                    ),
                ],
            },
        ),
        migrations.RunSQL(sql=CASCADE_IN_THE_DATABASE, reverse_sql=migrations.RunSQL.noop),
    ]
