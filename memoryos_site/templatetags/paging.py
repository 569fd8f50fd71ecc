"""The pager of every paged list (the console's and the end user's memory page): the links a page of a list offers."""

from __future__ import annotations

from dataclasses import dataclass

from django import template
from django.core.paginator import Page

register = template.Library()


@dataclass(frozen=True)
class PageLink:
    """One entry of a pager: a page number with its query string, or a gap ("…") where `query` is empty."""

    label: str
    query: str = ""
    current: bool = False


@dataclass(frozen=True)
class Pager:
    previous: str  # the query string of the previous page, "" on the first
    next: str  # the query string of the next page, "" on the last
    numbers: list[PageLink]


@register.simple_tag(takes_context=True)
def pager(context, page: Page, param: str = "page") -> Pager:
    """The previous, next and numbered links of `page`: the request's query string with only `param` changed, so
    filters, sorting and the pages of other lists on the same screen survive; long ranges are elided ("1 … 4 5 6 …
    20")."""
    params = context["request"].GET.copy()

    def query(number: int) -> str:
        params[param] = str(number)
        return f"?{params.urlencode()}"

    numbers = []
    for number in page.paginator.get_elided_page_range(page.number, on_each_side=1, on_ends=1):
        if number == page.number:
            numbers.append(PageLink(str(number), current=True))
        else:  # a page to go to, or the ellipsis of a gap
            numbers.append(PageLink(str(number), query(number) if isinstance(number, int) else ""))
    return Pager(
        previous=query(page.previous_page_number()) if page.has_previous() else "",
        next=query(page.next_page_number()) if page.has_next() else "",
        numbers=numbers,
    )
