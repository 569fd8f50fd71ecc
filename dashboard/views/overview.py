"""The tenant overview: memory per tier, promotions and evictions per day, LLM calls and tokens per day, and for
supervisors and admins the escalations waiting for them."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.console import console_or_404, page_or_partial
from dashboard.forms import OverviewForm
from dashboard.plots import figure_html, llm_figure, tiers_figure, updating_figure
from memory.selectors.console import tenant_overview
from memory.selectors.escalations import escalation_counts


@require_GET
@login_required
def overview(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug)
    form = OverviewForm(request.GET)
    days = form.cleaned_data["days"] if form.is_valid() and form.cleaned_data["days"] else 30
    data = tenant_overview(tenant=console.tenant, days=days, now=timezone.now())
    plots = {
        "tiers": figure_html(tiers_figure(data), div_id="plot-tiers"),
        "updating": figure_html(updating_figure(data), div_id="plot-updating"),
        "llm": figure_html(llm_figure(data), div_id="plot-llm"),
    }
    context = {"console": console, "form": form, "days": days, "overview": data, "plots": plots}
    if console.can_write and not request.htmx:  # the supervisor's queue, counted (the charts fragment has none)
        context["escalations"] = escalation_counts(tenant=console.tenant)
    return render(request, page_or_partial(request, "dashboard/overview.html", "charts"), context)
