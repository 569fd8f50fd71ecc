"""The one pager every paged list uses (templates/_pagination.html): a labelled nav of plain links to the previous,
the next and numbered pages, long ranges elided, each link changing only its own list's page in the query string."""

from __future__ import annotations

import re

from django.core.paginator import Paginator
from django.template.loader import render_to_string
from django.test import RequestFactory


def pager(query: str, number: int, **parameters) -> str:
    request = RequestFactory().get(f"/list/{query}")
    page = Paginator(range(200), 10).get_page(number)
    return render_to_string("_pagination.html", {"page": page, "url": "/list/", **parameters}, request=request)


def test_a_middle_page_links_its_neighbours_and_both_ends_and_elides_the_rest():
    html = pager("?page=10", 10)

    numbers = re.findall(r"<li>(?:<a [^>]*>|<span [^>]*>)([^<]+)<", html)
    assert numbers == ["1", "…", "9", "10", "11", "…", "20"]
    assert '<span aria-current="page" class="page-current" tabindex="-1">10</span>' in html
    assert 'href="/list/?page=9"' in html and 'rel="prev"' in html and 'href="/list/?page=11"' in html


def test_the_links_change_only_their_own_parameter_and_keep_the_rest_of_the_query():
    html = pager("?q=tea&topics=3&facts=2", 3, param="topics", label="Pages of topics")

    assert '<nav class="pagination" aria-label="Pages of topics"' in html
    assert (
        'href="/list/?q=tea&amp;topics=2&amp;facts=2"' in html
        and 'href="/list/?q=tea&amp;topics=4&amp;facts=2"' in html
    )


def test_the_first_page_has_no_previous_and_the_last_no_next():
    assert 'rel="prev"' not in pager("", 1) and 'rel="next"' in pager("", 1)
    assert 'rel="next"' not in pager("?page=20", 20) and 'rel="prev"' in pager("?page=20", 20)


def test_a_single_page_has_no_pager():
    request = RequestFactory().get("/list/")
    page = Paginator(range(5), 10).get_page(1)

    assert render_to_string("_pagination.html", {"page": page, "url": "/list/"}, request=request).strip() == ""
