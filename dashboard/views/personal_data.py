"""Personal data (govern: dpo and admin): the tenant's policy, re-scans of stored memory with their progress, and
revealing masked values on a user's memory page (with a reason, audited)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.console import actor_of, console_or_404, console_reveal, get_or_404, record_read, request_id_of
from dashboard.forms import PersonalDataPolicyForm, ReasonForm
from dashboard.views.users import user_case_context
from memory.models import EndUser
from memory.personal_data import CATEGORIES
from memory.roles import Permission
from memory.selectors.people import end_user_get
from memory.selectors.review import personal_data_scan_get, personal_data_scan_list
from memory.services.personal_data import (
    PolicyError,
    personal_data_policy_update,
    personal_data_reveal_record,
    personal_data_scan_start,
)

TEMPLATE = "dashboard/personal_data.html"
SCANS_SHOWN = 10


def _initial(policy) -> dict:
    return {name: getattr(policy, name) for name in (*CATEGORIES, "phone_region", "review_mode")} | {
        "government_id_patterns": "\n".join(policy.government_id_patterns),
        "review_keywords": policy.review_keywords,
    }


@require_http_methods(["GET", "POST"])
@login_required
def policy(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    form = PersonalDataPolicyForm(request.POST or None, initial=_initial(console.policy))
    if form.is_bound and form.is_valid():
        who = {"actor": actor_of(request), "reason": form.cleaned_data["reason"], "request_id": request_id_of(request)}
        try:
            personal_data_policy_update(tenant=console.tenant, **form.policy_values(), **who)
        except PolicyError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "The personal-data policy was saved. It applies to what is written from now on.")
            return redirect("console:personal_data", slug)
    scans = list(personal_data_scan_list(tenant=console.tenant)[:SCANS_SHOWN])
    context = {"console": console, "form": form, "scans": scans, "categories": CATEGORIES}
    return render(request, TEMPLATE, context, status=400 if form.is_bound else 200)


@require_POST
@login_required
def scan_start(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    scan = personal_data_scan_start(tenant=console.tenant, actor=actor_of(request), request_id=request_id_of(request))
    messages.success(request, f"Re-scan {scan.pk} is queued: stored memory is redacted under the current policy.")
    return redirect("console:personal_data", slug)


@require_GET
@login_required
def scan(request: HttpRequest, slug: str, scan_id: int) -> HttpResponse:
    """One re-scan's progress (the row the policy page polls while it runs)."""
    console = console_or_404(request, slug, Permission.GOVERN)
    found = get_or_404(personal_data_scan_get, tenant=console.tenant, id=scan_id)
    template = "dashboard/_scan.html" if request.htmx else "dashboard/scan.html"
    return render(request, template, {"console": console, "scan": found})


REVEAL_GRANT = "memoryos_reveal"  # session key: the end user whose next memory page is shown unmasked, once


@require_http_methods(["GET", "POST"])
@login_required
def reveal(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """POST (a reason, audited) grants one unmasked view and redirects to it (POST-redirect-GET); the GET shows it
    and spends the grant, so a refresh shows the masked page again and writes no second audit entry."""
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    if request.method == "POST":
        return _reveal_grant(request, slug, end_user)
    if request.session.pop(REVEAL_GRANT, None) != end_user.pk:
        messages.info(request, "Personal data is masked again. Reveal it with a reason to see it once more.")
        return redirect(_with_query(reverse("console:user", args=[slug, end_user_id]), request))
    context = user_case_context(request, console_reveal(request, console), end_user)
    record_read(request, end_user, "user memory page (revealed)")
    response = render(request, "dashboard/user.html", context)
    response["Cache-Control"] = "no-store"
    return response


def _reveal_grant(request: HttpRequest, slug: str, end_user: EndUser) -> HttpResponse:
    """Record the reveal with its reason and grant the one unmasked view it was for."""
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Revealing personal data needs a reason.")
        return redirect("console:user", slug, end_user.pk)
    try:
        personal_data_reveal_record(
            end_user=end_user, actor=actor_of(request), reason=form.cleaned_data["reason"],
            what="user memory page", request_id=request_id_of(request),
        )  # fmt: skip
    except PolicyError as exc:
        messages.error(request, str(exc))
        return redirect("console:user", slug, end_user.pk)
    request.session[REVEAL_GRANT] = end_user.pk
    return redirect(_with_query(reverse("console:reveal", args=[slug, end_user.pk]), request))


def _with_query(url: str, request: HttpRequest) -> str:
    """`url` with the request's query string (the tab and search the reveal was asked from)."""
    query = request.GET.urlencode()
    return f"{url}?{query}" if query else url
