"""Escalations: any operator who reads a user's memory (the read-only agent too) flags a memory item (turn, segment,
fact, profile version) for a supervisor with a note; supervisors and admins see the tenant's open ones, oldest first,
and settle each by acting on the item (edit, mark outdated, forget: dashboard.views.actions resolves the flag with
it), by resolving it with a note, or by dismissing it (memory.services.validity audits every step)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from dashboard.console import actor_of, console_or_404, get_or_404, page_or_partial, request_id_of, safe_next
from dashboard.forms import EscalationForm, EscalationSettleForm
from memory.items import ITEM_KINDS
from memory.models import EndUser
from memory.not_found import not_found_message
from memory.roles import Permission
from memory.selectors.escalations import escalation_get, escalation_list, escalation_targets
from memory.services.governance import GovernanceError
from memory.services.turns import EndUserClosed
from memory.services.validity import escalation_open, escalation_resolve

SHOWN = 100  # the oldest open escalations; the page says how many more wait


@require_http_methods(["GET", "POST"])
@login_required
def escalation_flag(request: HttpRequest, slug: str, kind: str, item_id: int) -> HttpResponse:
    """The flag form (an HTMX modal, or a page); POST opens the escalation and goes back where the operator was."""
    console = console_or_404(request, slug, Permission.READ)
    if kind not in ITEM_KINDS:
        raise Http404("No such kind of memory")
    item = get_or_404(ITEM_KINDS[kind].get, tenant=console.tenant, id=item_id)
    back = safe_next(request, reverse("console:user", args=[slug, item.end_user.pk]))
    form = EscalationForm(request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        try:
            escalation_open(tenant=console.tenant, item=item, actor=actor_of(request), note=form.cleaned_data["note"],
                            request_id=request_id_of(request))  # fmt: skip
            messages.success(request, "Flagged: a supervisor will see it in the escalations queue.")
            return HttpResponseClientRedirect(back) if request.htmx else HttpResponseRedirect(back)
        except GovernanceError as exc:
            form.add_error(None, str(exc))
        except EndUserClosed:
            raise Http404(not_found_message(EndUser.DoesNotExist)) from None
    context = {"console": console, "kind": kind, "label": ITEM_KINDS[kind].label, "action": "flag", "item": item}
    context |= {"form": form, "next": back, "owner": item.end_user}
    return render(request, page_or_partial(request, "dashboard/action.html", "form"), context)


@require_GET
@login_required
def escalation_queue(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.WRITE)
    open_ones = escalation_list(tenant=console.tenant)
    context = {"console": console, "escalations": escalation_targets(open_ones[:SHOWN]), "shown": SHOWN}
    context["open_count"] = open_ones.count()
    return render(request, "dashboard/escalations.html", context)


@require_POST
@login_required
def escalation_settle(request: HttpRequest, slug: str, escalation_id: int) -> HttpResponse:
    """Resolve (or, with `dismiss`, dismiss) one escalation; HTMX swaps its row, plain HTML goes back to the queue."""
    console = console_or_404(request, slug, Permission.WRITE)
    escalation = get_or_404(escalation_get, tenant=console.tenant, id=escalation_id)
    form = EscalationSettleForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            who = {"actor": actor_of(request), "request_id": request_id_of(request)}
            escalation = escalation_resolve(escalation=escalation, **form.cleaned_data, **who)
        except GovernanceError as exc:
            error = str(exc)
    else:
        error = "A resolution note is required."
    if not request.htmx:
        if error:
            messages.error(request, f"Nothing was changed: {error}.")
        else:
            messages.success(request, f"{escalation.get_state_display()}: the escalation is settled.")
        return HttpResponseRedirect(reverse("console:escalations", args=[slug]))
    context = {"console": console, "escalation": escalation_targets([escalation])[0], "error": error, "form": form}
    return render(request, "dashboard/escalations.html#escalation", context)
