"""Lists cost the same number of queries however many items they show (no query per item)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests import builders

LISTS = ["/api/v1/pages/", "/api/v1/segments/", "/api/v1/knowledge/", "/api/v1/profile-versions/", "/api/v1/audit/"]


def add_memory(end_user, assistant, n: int) -> None:
    space = builders.space_of(end_user, assistant)
    for i in range(n):
        page = builders.page(space, user_message=f"m{i}", assistant_reply="r")
        builders.segment(space, summary=f"s{i}", last_touched_at=page.at, heat_sampled=True)
        builders.knowledge(end_user, text=f"f{i}", source_pages=[page])
        builders.profile(end_user, text=f"p{i}")


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
