"""Page vectors in half precision, and the vector channel's pages found in its own index (issue 14).

- `embedding` and `topic_embedding` become pgvector's `halfvec`: two bytes a dimension instead of four. A page row
  of 2.4 KB held a 1.5 KB vector, so at 1,000 full users retrieval waited on the disk (see
  docs/decisions/0006-half-precision-page-vectors.md).
- `embedding_bits` is generated from `embedding`, and PostgreSQL cannot change the type of a column a generated
  column reads: it is dropped and added again in the same statement, computed from the half-precision vector.
- A new type brings its default storage: the vector is kept in the row again (`MAIN`, as migration 0011 made it).
- `page_space_bits` is keyed on (space, id): the vector channel's second pass finds the pages it re-ranks in the
  leaves its first pass has just read, not by descending the primary key once per page.

One ALTER TABLE rewrites the table once, holding its lock until it ends (minutes at 1,000 full users: plan a
maintenance window for a large database; docs/production.md). One transaction: a failure leaves the schema as it was.
"""

from django.db import migrations, models

import memory.models.tiers

TO_HALF = """
ALTER TABLE memory_page
    DROP COLUMN embedding_bits,
    ALTER COLUMN embedding TYPE halfvec USING embedding::halfvec,
    ALTER COLUMN embedding SET STORAGE MAIN,
    ALTER COLUMN topic_embedding TYPE halfvec USING topic_embedding::halfvec,
    ADD COLUMN embedding_bits bit varying GENERATED ALWAYS AS (binary_quantize(embedding)) STORED;
CREATE INDEX page_space_bits ON memory_page (space_id, id) INCLUDE (embedding_bits);
"""

TO_SINGLE = """
ALTER TABLE memory_page
    DROP COLUMN embedding_bits,
    ALTER COLUMN embedding TYPE vector USING embedding::vector,
    ALTER COLUMN embedding SET STORAGE MAIN,
    ALTER COLUMN topic_embedding TYPE vector USING topic_embedding::vector,
    ADD COLUMN embedding_bits bit varying GENERATED ALWAYS AS (binary_quantize(embedding)) STORED;
CREATE INDEX page_space_bits ON memory_page (space_id) INCLUDE (id, embedding_bits);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0023_page_rows_rewritten_whole"),
    ]

    operations = [
        migrations.RunSQL(
            sql=TO_HALF,
            reverse_sql=TO_SINGLE,
            state_operations=[
                migrations.RemoveIndex(model_name="page", name="page_space_bits"),
                migrations.AlterField(
                    model_name="page",
                    name="embedding",
                    field=memory.models.tiers.HalfVectorField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="page",
                    name="topic_embedding",
                    field=memory.models.tiers.HalfVectorField(blank=True, null=True),
                ),
                migrations.AddIndex(
                    model_name="page",
                    index=models.Index(fields=["space", "id"], include=("embedding_bits",), name="page_space_bits"),
                ),
            ],
        ),
    ]
