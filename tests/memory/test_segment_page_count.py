"""A segment's page count is a COUNT(*) answered from the index on the pages' segment: no page row is read."""

from __future__ import annotations

from django.db import connection

from memory.models import Segment
from memory.selectors.items import segment_page_count
from tests import builders


def counted(space):
    return Segment.objects.filter(space=space).annotate(page_count=segment_page_count()).order_by("id")


def test_each_segment_counts_its_own_pages_and_an_empty_one_none(space):
    full = builders.segment_with_pages(space, summary="band", messages=["drums", "bass", "vocals"])
    empty = builders.segment(space, summary="nothing yet")
    assert [(s.id, s.page_count) for s in counted(space)] == [(full.id, 3), (empty.id, 0)]


def test_counting_reads_the_index_alone(space):
    builders.segment_with_pages(space, summary="band", messages=["drums", "bass"])
    sql, params = counted(space).query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a few test rows would otherwise be read whole
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Only Scan" in plan and "on memory_page" in plan, plan
