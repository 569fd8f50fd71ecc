"""Retrieval that reads one space's rows, not every space's (issue 14: retrieval at 1,000 users).

- `embedding_bits`: each page's embedding quantised to one bit per dimension, kept in a covering index on the
  space (`page_space_bits`). The vector channel ranks a space's pages by Hamming distance over that index alone
  and re-ranks the best few hundred by exact cosine, instead of reading every page row of the space.
- `search` gains a last lexeme naming the space ('space 42', which no parser makes of a word), so the full-text
  channel asks the GIN index for one space's matches (space AND any term) instead of every space's. A generated
  column's expression cannot be altered in place, so the column is dropped and added again (PostgreSQL computes it
  for every row, out of line, since the column is new) and then made inline (MAIN) as migration 0011 made it;
  migration 0017 rewrites the existing rows so that their new values are stored inline too.

One transaction: a failure leaves the schema as it was.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

import memory.models.tiers


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0015_pii_personal_data"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="embedding_bits",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    "embedding", function="binary_quantize", output_field=memory.models.tiers.VarBitField()
                ),
                output_field=memory.models.tiers.VarBitField(),
            ),
        ),
        migrations.RemoveIndex(model_name="page", name="page_search"),
        migrations.RemoveField(model_name="page", name="search"),
        migrations.AddField(
            model_name="page",
            name="search",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.contrib.postgres.search.CombinedSearchVector(
                    django.contrib.postgres.search.SearchVector(
                        "user_message",
                        models.Case(
                            models.When(reply_source="system", then=models.Value("")),
                            default=models.F("assistant_reply"),
                            output_field=models.TextField(),
                        ),
                        config="english",
                    ),
                    "||",
                    memory.models.tiers.SpaceLexemeVector(),
                    django.contrib.postgres.search.SearchConfig("english"),
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.RunSQL(
            sql="ALTER TABLE memory_page ALTER COLUMN search SET STORAGE MAIN",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddIndex(
            model_name="page",
            index=django.contrib.postgres.indexes.GinIndex(fields=["search"], name="page_search"),
        ),
        migrations.AddIndex(
            model_name="page",
            index=models.Index(fields=["space"], include=("id", "embedding_bits"), name="page_space_bits"),
        ),
    ]
