"""Lists cost the same number of queries however many items they show (no query per item)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory.models import HeatSample, KnowledgeEntry, ProfileVersion, Segment
from memory.models.tiers import KnowledgeKind
from memory.services.promotion import text_hash
from memory.services.turns import turn_record

LISTS = ["/api/v1/pages/", "/api/v1/segments/", "/api/v1/knowledge/", "/api/v1/profile-versions/", "/api/v1/audit/"]


def add_memory(end_user, assistant, n: int) -> None:
    for i in range(n):
        page = turn_record(end_user=end_user, assistant=assistant, user_message=f"m{i}", assistant_reply="r").page
        segment = Segment.objects.create(space=page.space, summary=f"s{i}", last_touched_at=page.at)
        HeatSample.objects.create(
            segment=segment,
            space=page.space,
            at=page.at,
            n_visit=0,
            l_interaction=0,
            r_recency=1,
            heat=1,
            event="created",
        )
        entry = KnowledgeEntry.objects.create(
            end_user=end_user, kind=KnowledgeKind.USER, text=f"f{i}", text_hash=text_hash(f"f{i}")
        )
        entry.source_pages.add(page)
        ProfileVersion.objects.create(end_user=end_user, number=i + 1, text=f"p{i}")


def queries(api, url: str) -> int:
    api.get(url)  # warm: the token's last_used_at is written at most once a minute
    with CaptureQueriesContext(connection) as captured:
        assert api.get(url).status_code == 200
    return len(captured)


@pytest.mark.parametrize("url", LISTS)
def test_a_list_costs_the_same_queries_for_two_items_or_twelve(api, alice, bob, assistant, url):
    add_memory(alice, assistant, 2)
    few = queries(api, url)
    add_memory(bob, assistant, 10)

    assert queries(api, url) == few
