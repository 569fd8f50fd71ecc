"""The console's case view of one end user: which tab a request shows, and each tab's rows, read only when that tab
is shown (the page no longer renders every tier at once). Every tab's read is audited as a read of memory."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest
from django.utils import timezone

from dashboard.console import Console, record_read
from dashboard.forms import CASE_TABS
from dashboard.plots import figure_html, user_heat_figure
from memory.models import EndUser, MemorySpace, PersonalDataAction
from memory.selectors.case import CaseCounts, case_search, chat_turns_page, user_audit_page
from memory.selectors.console import long_term_memory, pages_pending_count, segment_rows, short_term_list
from memory.services.personal_data import redactor_for

DEFAULT_TAB = "short-term"
CHATS_PER_PAGE = 20
ROWS_PER_PAGE = 25  # segments, and facts of each store: the rows' action buttons make long tables slow to render
AUDIT_PER_PAGE = 50
COUNTED = {"short-term": "short_term", "mid-term": "segments", "long-term": "knowledge", "chats": "chats"}
COUNTED["audit"] = "audit"


def case_tab(tab: str, *, query: str, can_govern: bool) -> str:
    """The tab to show: the search when there is a query, else the one asked for, else short-term memory.

    The audit tab needs the govern permission, as the audit log does: 403 without it.
    """
    if query.strip():
        return "search"
    if tab == "audit" and not can_govern:
        raise PermissionDenied("The audit tab is for data-protection officers and admins.")
    return tab if tab in COUNTED else DEFAULT_TAB


def case_tabs(counts: CaseCounts, *, can_govern: bool) -> list[tuple[str, str, int]]:
    """(key, label, count) of each tab the operator may open, in order."""
    return [
        (key, label, getattr(counts, COUNTED[key]))
        for key, label in CASE_TABS
        if key in COUNTED and (key != "audit" or can_govern)
    ]


def _short_term(request, end_user: EndUser, space: MemorySpace, query: str) -> dict:
    return {"short_term": short_term_list(space=space)}


def _mid_term(request, end_user: EndUser, space: MemorySpace, query: str) -> dict:
    """The segments, a page at a time; the heat chart only once its section is opened (`chart=open`)."""
    rows = segment_rows(space=space, now=timezone.now())
    chart = rows and request.GET.get("chart") == "open"
    heat_plot = figure_html(user_heat_figure(rows), div_id="user-heat") if chart else ""
    segments = Paginator(rows, ROWS_PER_PAGE).get_page(request.GET.get("page"))
    return {"segments": segments, "pending_pages": pages_pending_count(space=space), "heat_plot": heat_plot}


def _long_term(request, end_user: EndUser, space: MemorySpace, query: str) -> dict:
    """The profile and a page of each knowledge store (the same page number for both, newest first)."""
    memory = long_term_memory(end_user=end_user, space=space)
    longest = max(memory.user_knowledge, memory.assistant_knowledge, key=len)
    facts = Paginator(longest, ROWS_PER_PAGE).get_page(request.GET.get("page"))
    totals = {"user": len(memory.user_knowledge), "assistant": len(memory.assistant_knowledge)}
    shown = slice(facts.start_index() - 1 if longest else 0, facts.end_index())
    memory.user_knowledge, memory.assistant_knowledge = memory.user_knowledge[shown], memory.assistant_knowledge[shown]
    return {"long_term": memory, "facts_page": facts, "facts_total": totals}


def _chats(request, end_user: EndUser, space: MemorySpace, query: str) -> dict:
    return {"turns": chat_turns_page(space=space, number=request.GET.get("page"), per_page=CHATS_PER_PAGE)}


def _audit(request, end_user: EndUser, space: MemorySpace, query: str) -> dict:
    return {"entries": user_audit_page(end_user=end_user, number=request.GET.get("page"), per_page=AUDIT_PER_PAGE)}


def _search(request, end_user: EndUser, space: MemorySpace, query: str) -> dict:
    return {"found": case_search(end_user=end_user, space=space, query=query)}


TAB_READS: dict[str, tuple[str, Callable[..., dict]]] = {
    "short-term": ("user memory: short-term", _short_term),
    "mid-term": ("user memory: mid-term", _mid_term),
    "long-term": ("user memory: long-term", _long_term),
    "chats": ("user memory: chats", _chats),
    "audit": ("user memory: audit entries", _audit),
    "search": ("user memory: search", _search),
}


def tab_context(
    request: HttpRequest, console: Console, *, tab: str, end_user: EndUser, space: MemorySpace | None, query: str
) -> dict:
    """The rows of `tab` (none when the user has no memory yet); the read goes into the audit log."""
    if space is None:
        return {}
    what, read = TAB_READS[tab]
    context = read(request, end_user, space, query)
    context["next_query"] = quote(request.get_full_path(), safe="/")  # once, not once per action button
    if tab == "search":  # what was looked for is part of the read, without what the tenant does not store
        words = redactor_for(console.policy, PersonalDataAction.DO_NOT_STORE)(query.strip())
        what = f"{what} for “{words[:100]}”"
    record_read(request, end_user, what, "memoryspace", space.pk)
    return context
