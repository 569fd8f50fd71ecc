"""The data-protection officer's inbox (dpo and admin: govern): requests from data subjects by deadline, overdue
ones marked, a form to log one as it arrived, and each request's page with its audited timeline and the steps that
answer it (memory.services.data_subject_requests)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.console import actor_of, console_or_404, get_or_404, page_or_partial, request_id_of
from dashboard.forms import DataSubjectRequestFilter, DataSubjectRequestForm, DataSubjectRequestStepForm
from memory.roles import Permission
from memory.selectors.data_subject_requests import (
    data_subject_request_get,
    data_subject_request_list,
    data_subject_request_timeline,
    end_user_search,
)
from memory.services.data_subject_requests import (
    DataSubjectRequestError,
    data_subject_request_extend,
    data_subject_request_fulfil,
    data_subject_request_open,
    data_subject_request_refuse,
    data_subject_request_start,
    data_subject_request_withdraw,
)
from memory.services.legal_hold import LegalHoldActive
from memory.services.turns import EndUserClosed

SHOWN = 200  # the nearest deadlines; the page says how many there are
USERS_SHOWN = 20


def _marked(requests, now) -> list:
    """The requests, each with `overdue` for the template."""
    requests = list(requests)
    for request in requests:
        request.overdue = request.overdue_at(now)
    return requests


@require_GET
@login_required
def inbox(request: HttpRequest, slug: str) -> HttpResponse:
    """Requests by deadline, filtered by status, kind and user; HTMX refreshes only the list."""
    console = console_or_404(request, slug, Permission.GOVERN)
    form = DataSubjectRequestFilter(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    found = data_subject_request_list(
        tenant=console.tenant, status=filters.get("status"), kind=filters.get("kind"), search=filters.get("q", "")
    )
    users = end_user_search(tenant=console.tenant, search=filters.get("q", ""))[:USERS_SHOWN]
    context = {"console": console, "form": form, "requests": _marked(found[:SHOWN], timezone.now()), "users": users}
    return render(request, page_or_partial(request, "dashboard/requests.html", "list"), context)


@require_http_methods(["GET", "POST"])
@login_required
def request_new(request: HttpRequest, slug: str) -> HttpResponse:
    """Log a request as it arrived; then its page."""
    console = console_or_404(request, slug, Permission.GOVERN)
    initial = {"received_at": timezone.localtime().strftime("%Y-%m-%dT%H:%M"), "external_id": request.GET.get("user")}
    form = DataSubjectRequestForm(request.POST or None, initial=initial)
    if form.is_bound and form.is_valid():
        try:
            logged = data_subject_request_open(
                tenant=console.tenant, actor=actor_of(request), request_id=request_id_of(request), **form.cleaned_data
            )
        except DataSubjectRequestError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Logged. It is due {logged.due_at:%d %b %Y}.")
            return redirect("console:request", slug, logged.pk)
    return render(request, "dashboard/request_new.html", {"console": console, "form": form})


@require_GET
@login_required
def request_detail(request: HttpRequest, slug: str, request_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    found = get_or_404(data_subject_request_get, tenant=console.tenant, id=request_id)
    return render(request, page_or_partial(request, "dashboard/request.html", "case"), _case(console, found))


def _case(console, found, error: str = "") -> dict:
    timeline = data_subject_request_timeline(found)
    return {"console": console, "case": _marked([found], timezone.now())[0], "timeline": timeline, "error": error}


STEPS = {
    "start": lambda case, note, basis, **who: data_subject_request_start(request=case, **who),
    "extend": lambda case, note, basis, **who: data_subject_request_extend(request=case, reason=note, **who),
    "fulfil": lambda case, note, basis, **who: data_subject_request_fulfil(
        request=case, note=note, legal_basis=basis, **who
    ),
    "refuse": lambda case, note, basis, **who: data_subject_request_refuse(request=case, reason=note, **who),
    "withdraw": lambda case, note, basis, **who: data_subject_request_withdraw(request=case, note=note, **who),
}


@require_POST
@login_required
def request_step(request: HttpRequest, slug: str, request_id: int, step: str) -> HttpResponse:
    """One step on the request; HTMX swaps the case, plain HTML goes back to its page with a message."""
    console = console_or_404(request, slug, Permission.GOVERN)
    if step not in STEPS:
        raise Http404("No such step")
    found = get_or_404(data_subject_request_get, tenant=console.tenant, id=request_id)
    form = DataSubjectRequestStepForm(request.POST)
    data = form.cleaned_data if form.is_valid() else {"note": "", "legal_basis": ""}
    error = ""
    try:
        who = {"actor": actor_of(request), "request_id": request_id_of(request)}
        found = STEPS[step](found, data["note"], data["legal_basis"], **who)
    except (DataSubjectRequestError, LegalHoldActive, EndUserClosed) as exc:
        error = str(exc) or "the user has been erased"
    if request.htmx:
        found = data_subject_request_get(tenant=console.tenant, id=request_id)
        return render(request, "dashboard/request.html#case", _case(console, found, error))
    if error:
        messages.error(request, f"Nothing was changed: {error}.")
    else:
        messages.success(request, f"Done: the request is {found.get_status_display().lower()}.")
    return redirect("console:request", slug, request_id)
