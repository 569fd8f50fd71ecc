"""One memory item each: a segment with its pages, chains and heat plot; a page and its source; a fact and the pages
it came from. Every id is looked up within the operator's tenant; every view is an audited read."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.console import Console, console_or_404, record_read
from dashboard.plots import figure_html, segment_heat_figure
from memory.models import KnowledgeEntry, Page, Segment
from memory.selectors.console import (
    knowledge_in_tenant,
    page_detail,
    page_in_tenant,
    segment_detail,
    segment_in_tenant,
)


def _segment_or_404(console: Console, segment_id: int) -> Segment:
    try:
        return segment_in_tenant(tenant=console.tenant, segment_id=segment_id)
    except Segment.DoesNotExist:
        raise Http404("No such segment") from None


def _page_or_404(console: Console, page_id: int) -> Page:
    try:
        return page_in_tenant(tenant=console.tenant, page_id=page_id)
    except Page.DoesNotExist:
        raise Http404("No such page") from None


def _knowledge_or_404(console: Console, entry_id: int) -> KnowledgeEntry:
    try:
        return knowledge_in_tenant(tenant=console.tenant, entry_id=entry_id)
    except KnowledgeEntry.DoesNotExist:
        raise Http404("No such knowledge entry") from None


@require_GET
@login_required
def segment(request: HttpRequest, slug: str, segment_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    now = timezone.now()
    detail = segment_detail(segment=_segment_or_404(console, segment_id), now=now)
    end_user = detail.segment.space.end_user
    record_read(request, end_user, "segment", "segment", segment_id)
    heat_plot = figure_html(segment_heat_figure(detail, now), div_id="segment-heat")
    context = {"console": console, "end_user": end_user, "detail": detail, "heat_plot": heat_plot}
    return render(request, "dashboard/segment.html", context)


@require_GET
@login_required
def page(request: HttpRequest, slug: str, page_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    detail = page_detail(page=_page_or_404(console, page_id))
    end_user = detail.page.space.end_user
    record_read(request, end_user, "page", "page", page_id)
    return render(request, "dashboard/page.html", {"console": console, "end_user": end_user, "detail": detail})


@require_GET
@login_required
def knowledge(request: HttpRequest, slug: str, entry_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    entry = _knowledge_or_404(console, entry_id)
    record_read(request, entry.end_user, "knowledge entry", "knowledge", entry_id)
    return render(request, "dashboard/knowledge.html", {"console": console, "end_user": entry.end_user, "entry": entry})
