"""Passages of long pages (issue 28): overlapping windows of a page's text, each with its own half-precision vector.

The foreign keys to the page and the space are created here, with `ON DELETE CASCADE`, and Django is told to create
none and to do nothing on delete: every path that deletes pages or spaces (forget, erase, retention, import) takes
their passages with it, and no delete sends one more statement. The unique (page, start) index and
`passage_space_bits` (space, id, with the binary-quantised vector: the vector channel's first pass over a space's
passages reads only it) serve both keys, so neither gets an index of its own.
"""

import django.db.models.deletion
from django.db import migrations, models

import memory.models.tiers

CASCADE_IN_THE_DATABASE = """
ALTER TABLE memory_pagepassage
    ADD CONSTRAINT passage_page_cascade FOREIGN KEY (page_id) REFERENCES memory_page (id) ON DELETE CASCADE,
    ADD CONSTRAINT passage_space_cascade FOREIGN KEY (space_id) REFERENCES memory_memoryspace (id) ON DELETE CASCADE;
"""

NO_CASCADE = """
ALTER TABLE memory_pagepassage DROP CONSTRAINT passage_page_cascade, DROP CONSTRAINT passage_space_cascade;
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
                    "embedding_bits",
                    models.GeneratedField(
                        db_persist=True,
                        expression=models.Func(
                            "embedding", function="binary_quantize", output_field=memory.models.tiers.VarBitField()
                        ),
                        output_field=memory.models.tiers.VarBitField(),
                    ),
                ),
                (
                    "page",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="passages",
                        to="memory.page",
                    ),
                ),
                (
                    "space",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="memory.memoryspace",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["space", "id"], include=("embedding_bits",), name="passage_space_bits")
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("page", "start"), name="passage_start_per_page"),
                    models.CheckConstraint(
                        condition=models.Q(("end__gt", models.F("start")), ("start__gte", 0)), name="passage_span"
                    ),
                ],
            },
        ),
        migrations.RunSQL(sql=CASCADE_IN_THE_DATABASE, reverse_sql=NO_CASCADE),
    ]
