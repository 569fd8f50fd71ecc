"""Two bits a dimension for the vector channel's first pass, built while memory is read and written (issue 33).

The first pass ranked a space's pages by the Hamming distance of one bit a dimension (the sign). At a full user's
size it kept too little of the exact top 10 to re-rank fewer than 400 rows, and re-ranking 400 scattered rows is
most of what a retrieval waits for at 1,000 users. `embedding_code` holds each vector as two bits a dimension, a
thermometer code of three levels (below -t, between, above +t; Hamming distance between codes is the L1 distance
between levels), which keeps more of the exact top 10 with 200 rows re-ranked than one bit did with 400
(docs/decisions/0023-two-bit-first-pass.md).

PostgreSQL cannot add a stored generated column without rewriting the table under a lock that blocks reads, so:
1. `memory_vector_code(halfvec)` computes the code; the new column (nullable, no default: no rewrite) is kept by a
   trigger on every insert and on every update that sets the vector (pages and passages), from this step on.
2. Existing rows are given their code batch by batch, each batch committed on its own (migration 0023's way): a
   large installation goes on reading and writing; safe to run again after a failure.
3. The covering indexes over the codes are built with CREATE INDEX CONCURRENTLY, then the one-bit indexes dropped
   the same way. A process of the previous release still answers until it restarts (without its index, slower).
4. VACUUM (ANALYZE) of both tables (it lets reads and writes go on): giving every row its code wrote each row again,
   which clears the visibility map, and until a vacuum marks the table's pages all-visible again the first pass's
   index-only scan reads a table page for each entry.

The one-bit column `embedding_bits` stays in the tables, out of Django's models: the previous release's retrieval
names it, and dropping it while those processes run would fail their questions. It costs 48 bytes a row.
"""

from django.db import migrations

TABLES = ("memory_page", "memory_pagepassage")
BATCH = 5_000

# t = 0.385 / √d: for a unit vector whose coordinates spread like a normal's (σ = 1/√d), the 30th percentile of |x|
CODE_FUNCTION = """
CREATE OR REPLACE FUNCTION memory_vector_code(v halfvec) RETURNS bit varying
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT binary_quantize(v - array_fill((0.385 / sqrt(vector_dims(v)))::real, ARRAY[vector_dims(v)])::halfvec)
        || binary_quantize(v + array_fill((0.385 / sqrt(vector_dims(v)))::real, ARRAY[vector_dims(v)])::halfvec)
$$;
CREATE OR REPLACE FUNCTION memory_vector_code_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.embedding_code := memory_vector_code(NEW.embedding);
    RETURN NEW;
END
$$;
"""
CODE_FUNCTION_DROPPED = """
DROP FUNCTION IF EXISTS memory_vector_code_kept();
DROP FUNCTION IF EXISTS memory_vector_code(halfvec);
"""


def _column_kept(table: str) -> migrations.RunSQL:
    return migrations.RunSQL(
        f"""
        ALTER TABLE {table} ADD COLUMN IF NOT EXISTS embedding_code bit varying;
        CREATE OR REPLACE TRIGGER {table}_code BEFORE INSERT OR UPDATE OF embedding ON {table}
            FOR EACH ROW EXECUTE FUNCTION memory_vector_code_kept();
        """,
        reverse_sql=f"""
        DROP TRIGGER IF EXISTS {table}_code ON {table};
        ALTER TABLE {table} DROP COLUMN IF EXISTS embedding_code;
        """,
    )


def _codes_given(apps, schema_editor) -> None:
    """Every existing row's code, batch by batch by id, each batch its own transaction (autocommit)."""
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"SELECT coalesce(min(id), 0), coalesce(max(id), -1) FROM {table}")
            low, high = cursor.fetchone()
            for start in range(low, high + 1, BATCH):
                cursor.execute(
                    f"UPDATE {table} SET embedding_code = memory_vector_code(embedding) "
                    "WHERE id >= %s AND id < %s AND embedding IS NOT NULL AND embedding_code IS NULL",
                    [start, start + BATCH],
                )


def _index_swapped(table: str, new: str, old: str, old_column: str) -> list[migrations.RunSQL]:
    return [
        migrations.RunSQL(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {new} ON {table} (space_id, id) INCLUDE (embedding_code)",
            reverse_sql=f"DROP INDEX CONCURRENTLY IF EXISTS {new}",
        ),
        migrations.RunSQL(
            f"DROP INDEX CONCURRENTLY IF EXISTS {old}",
            reverse_sql=f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {old} ON {table} (space_id, id) INCLUDE ({old_column})",
        ),
    ]


class Migration(migrations.Migration):
    atomic = False  # the backfill commits batch by batch; CONCURRENTLY and VACUUM cannot run in a transaction

    dependencies = [("memory", "0033_pages_vacuumed_sooner")]

    operations = [
        migrations.RunSQL(CODE_FUNCTION, reverse_sql=CODE_FUNCTION_DROPPED),
        *(_column_kept(table) for table in TABLES),
        migrations.RunPython(_codes_given, migrations.RunPython.noop),
        *_index_swapped("memory_page", "page_space_code", "page_space_bits", "embedding_bits"),
        *_index_swapped("memory_pagepassage", "passage_space_code", "passage_space_bits", "embedding_bits"),
        *(migrations.RunSQL(f"VACUUM (ANALYZE) {table}", reverse_sql=migrations.RunSQL.noop) for table in TABLES),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="page", name="page_space_bits"),
                migrations.RemoveIndex(model_name="pagepassage", name="passage_space_bits"),
                migrations.RemoveField(model_name="page", name="embedding_bits"),
                migrations.RemoveField(model_name="pagepassage", name="embedding_bits"),
            ]
        ),
    ]
