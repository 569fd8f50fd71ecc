"""The full-text channel's own index keys, scoped to a space (issue 14: retrieval at 1,000 users).

The GIN index over `search` keeps one posting list per word holding every space's pages: the space's lexeme narrows
what a query returns, but the index still walks the whole lists of the question's common words, so retrieval slowed
as users were added. `search_keys` holds one int4 per lexeme of the page, a hash of the space with the lexeme
(`memory_search_keys`), and its GIN index keeps a list per word and space: a question reads its own space's lists.
Hashes may collide, so the channel confirms every match against `search` and the page's space (exact, as before).

Both GIN indexes of pages insert directly (`fastupdate = off`): with a pending list every query scans the entries
not yet merged (up to 4 MB), while a page's insert costs a little more (see
docs/decisions/0008-space-scoped-search-keys.md).

Adding a stored generated column rewrites `memory_page` once (PostgreSQL computes the keys for every row, under an
exclusive lock): minutes on a large installation, so run it in a maintenance window. One transaction: a failure
leaves the schema as it was.
"""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

import memory.models.tiers

# IMMUTABLE, as a generated column requires: hashtext and the text-search functions it calls are. Only pg_catalog
# functions are called, so the body works whatever the search_path (pg_dump restores with an empty one).
CREATE_FUNCTION = """
CREATE OR REPLACE FUNCTION memory_search_keys(space bigint, document tsvector) RETURNS integer[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT ARRAY(SELECT hashtext(space::text || ':' || lexeme) FROM unnest(tsvector_to_array(document)) AS lexeme) $$
"""
DROP_FUNCTION = "DROP FUNCTION IF EXISTS memory_search_keys(bigint, tsvector)"


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0018_topic_vectors_stored_once"),
    ]

    operations = [
        migrations.RunSQL(sql=CREATE_FUNCTION, reverse_sql=DROP_FUNCTION),
        migrations.AddField(
            model_name="page",
            name="search_keys",
            field=models.GeneratedField(
                db_persist=True,
                expression=memory.models.tiers.SearchKeys(
                    "space_id",
                    django.contrib.postgres.search.SearchVector(
                        "user_message",
                        models.Case(
                            models.When(reply_source="system", then=models.Value("")),
                            default=models.F("assistant_reply"),
                            output_field=models.TextField(),
                        ),
                        config="english",
                    ),
                ),
                output_field=django.contrib.postgres.fields.ArrayField(base_field=models.IntegerField(), size=None),
            ),
        ),
        migrations.AddIndex(
            model_name="page",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_keys"], name="page_search_keys", fastupdate=False
            ),
        ),
        # The words index too inserts directly, no pending list (whose entries every search scans), after merging
        # what its pending list holds; an option change, not a rebuild, so the state's index is swapped alone.
        migrations.RunSQL(
            sql=[
                "ALTER INDEX page_search SET (fastupdate = off)",
                "SELECT gin_clean_pending_list('page_search'::regclass)",
            ],
            reverse_sql="ALTER INDEX page_search RESET (fastupdate)",
            state_operations=[
                migrations.RemoveIndex(model_name="page", name="page_search"),
                migrations.AddIndex(
                    model_name="page",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fields=["search"], name="page_search", fastupdate=False
                    ),
                ),
            ],
        ),
    ]
