"""One memory item each: a segment with its pages, chains and heat plot; a page and its source; a fact and the pages
it came from. Every id is looked up within the operator's tenant; every view is an audited read."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.console import console_or_404, get_or_404, record_read
from dashboard.plots import figure_html, segment_heat_figure
from memory.selectors.case import reply_memory
from memory.selectors.console import page_detail, segment_detail
from memory.selectors.items import knowledge_get, page_get, segment_get


@require_GET
@login_required
def segment(request: HttpRequest, slug: str, segment_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    now = timezone.now()
    detail = segment_detail(segment=get_or_404(segment_get, tenant=console.tenant, id=segment_id), now=now)
    end_user = detail.segment.end_user
    record_read(request, end_user, "segment", "segment", segment_id)
    heat_plot = figure_html(segment_heat_figure(detail, now), div_id="segment-heat")
    context = {"console": console, "end_user": end_user, "detail": detail, "heat_plot": heat_plot}
    return render(request, "dashboard/segment.html", context)


@require_GET
@login_required
def page(request: HttpRequest, slug: str, page_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    detail = page_detail(page=get_or_404(page_get, tenant=console.tenant, id=page_id))
    end_user = detail.page.end_user
    record_read(request, end_user, "page", "page", page_id)
    used = reply_memory(reply=detail.reply, space=detail.page.space) if detail.reply else None
    context = {"console": console, "end_user": end_user, "detail": detail, "reply_memory": used}
    return render(request, "dashboard/page.html", context)


@require_GET
@login_required
def knowledge(request: HttpRequest, slug: str, entry_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    entry = get_or_404(knowledge_get, tenant=console.tenant, id=entry_id)
    record_read(request, entry.end_user, "knowledge entry", "knowledge", entry_id)
    return render(request, "dashboard/knowledge.html", {"console": console, "end_user": entry.end_user, "entry": entry})
