"""End users: search, one user's memory (STM, MTM, LPM), profile history with diffs, and the context preview."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.cases import case_tab, case_tabs, tab_context
from dashboard.console import Console, console_or_404, get_or_404, page_or_partial, record_read
from dashboard.diffs import profile_diff
from dashboard.forms import CaseForm, DiffForm, PreviewForm, UserSearchForm
from dashboard.previews import preview_build
from memory.models import EndUser
from memory.selectors.case import case_counts
from memory.selectors.console import end_users_page, memory_spaces, space_with
from memory.selectors.items import profile_version_list
from memory.selectors.people import end_user_get

USERS_PER_PAGE = 25


@require_GET
@login_required
def users(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug)
    form = UserSearchForm(request.GET)
    form.is_valid()
    query, sort = form.cleaned_data.get("q", ""), form.cleaned_data.get("sort") or "recent"
    page = end_users_page(
        tenant=console.tenant,
        query=query,
        sort=sort,
        number=request.GET.get("page"),
        per_page=USERS_PER_PAGE,
        now=timezone.now(),
    )
    context = {"console": console, "form": form, "page": page, "query": query, "sort": sort}
    return render(request, page_or_partial(request, "dashboard/users.html", "results"), context)


@require_GET
@login_required
def user_detail(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """The case view: one tab of the user's memory (or a search in it), the tab alone for an HTMX request."""
    console = console_or_404(request, slug)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    context = user_case_context(request, console, end_user)
    if request.htmx.target == "heat-chart":  # the chart's section was opened: the chart alone
        return render(request, "dashboard/_case_heat_chart.html", context)
    return render(request, page_or_partial(request, "dashboard/user.html", "case"), context)


def user_case_context(request: HttpRequest, console: Console, end_user: EndUser) -> dict:
    """What the case view shows for the query string's tab or search (its reveal, dashboard.views.personal_data,
    renders the same with personal data unmasked)."""
    form = CaseForm(request.GET)
    form.is_valid()
    tab, query = form.cleaned_data.get("tab") or "", form.cleaned_data.get("q", "")
    spaces = memory_spaces(end_user=end_user)
    space = space_with(spaces, form.cleaned_data.get("assistant", ""))
    tab = case_tab(tab, query=query, can_govern=console.can_govern)
    context = {"console": console, "end_user": end_user, "spaces": spaces, "space": space, "form": form, "tab": tab}
    context["tabs"] = case_tabs(case_counts(end_user=end_user, space=space), can_govern=console.can_govern)
    return context | tab_context(request, console, tab=tab, end_user=end_user, space=space, query=query)


@require_GET
@login_required
def profile_history(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    console = console_or_404(request, slug)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    versions = list(profile_version_list(tenant=console.tenant, end_user=end_user))
    form = DiffForm(request.GET)
    form.is_valid()
    diff = profile_diff(versions, form.cleaned_data.get("a"), form.cleaned_data.get("b"))
    record_read(request, end_user, "profile history")
    context = {"console": console, "end_user": end_user, "versions": versions, "form": form, "diff": diff}
    return render(request, page_or_partial(request, "dashboard/profile.html", "diff"), context)


@require_GET
@login_required
def preview(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """What retrieval would put into the prompt for a question; records no visit, but the read is audited."""
    console = console_or_404(request, slug)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    spaces = memory_spaces(end_user=end_user)
    space = space_with(spaces, request.GET.get("assistant", ""))
    form = PreviewForm(request.GET if "q" in request.GET else None)
    preview = None
    if form.is_valid() and space is not None:
        preview = preview_build(space=space, query=form.cleaned_data["q"], now=timezone.now())
        record_read(request, end_user, "context preview", "memoryspace", space.pk)
    context = {"console": console, "end_user": end_user, "form": form, "space": space, "spaces": spaces}
    context["preview"] = preview
    return render(request, page_or_partial(request, "dashboard/preview.html", "preview"), context)
