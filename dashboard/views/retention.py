"""Retention and legal holds, for dpo and admin (govern): the tenant's policy and its assistants' overrides, what the
next run would remove (the run's own planner, dry), the history of runs, and placing or releasing a legal hold."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.console import actor_of, console_or_404, get_or_404, request_id_of
from dashboard.forms import AssistantRetentionForm, LegalHoldForm, ReasonForm, RetentionPolicyForm
from memory.models.retention import ASSISTANT_TIERS, RETENTION_TIERS
from memory.roles import Permission
from memory.selectors.people import assistant_get, assistant_list, end_user_get
from memory.selectors.retention import (
    LIMIT_FIELDS,
    legal_hold_list,
    retention_plan,
    retention_policy_list,
    retention_run_get,
    retention_run_list,
)
from memory.services.legal_hold import LegalHoldError, legal_hold_place, legal_hold_release
from memory.services.retention import TIER_WORDS, retention_policy_delete, retention_policy_set, retention_run_request
from memory.services.turns import EndUserClosed

RUNS_SHOWN = 30
# What a run's forgets removed or re-derived besides the items themselves (ForgetImpact's fields), in words.
DERIVED_WORDS = {
    "pages": "turns",
    "segments": "topics",
    "knowledge": "facts learnt from them",
    "profile_versions": "profile versions",
    "topics_rederived": "topics re-derived",
    "profile_rederived": "profile versions re-derived",
    "chains_rederived": "conversation summaries re-derived",
    "turns_redacted": "later replies redacted",
    "records_redacted": "other records redacted",
    "stored_responses": "stored API answers",
    "exports_expired": "export files",
}


def _initial(policy, tiers) -> dict:
    return {tier: getattr(policy, LIMIT_FIELDS[tier]) for tier in tiers} if policy else {}


@require_http_methods(["GET", "POST"])
@login_required
def retention(request: HttpRequest, slug: str) -> HttpResponse:
    """The tenant's policy form, the dry run of the next run, overrides, holds and the runs so far."""
    console = console_or_404(request, slug, Permission.GOVERN)
    policies = list(retention_policy_list(tenant=console.tenant))
    tenant_policy = next((p for p in policies if p.assistant_id is None), None)
    form = RetentionPolicyForm(request.POST or None, initial=_initial(tenant_policy, RETENTION_TIERS))
    if form.is_bound and form.is_valid():
        retention_policy_set(tenant=console.tenant, limits=form.cleaned_data, actor=actor_of(request))
        messages.success(request, "Saved the retention policy. The preview below shows what the next run removes.")
        return redirect("console:retention", slug)
    plan = retention_plan(tenant=console.tenant)
    context = {"console": console, "form": form, "policy": tenant_policy, "plan": plan, "tier_words": TIER_WORDS}
    overrides = {p.assistant_id: p for p in policies if p.assistant_id}
    context["assistant_rows"] = [(a, overrides.get(a.pk)) for a in assistant_list(tenant=console.tenant)]
    context |= {"holds": legal_hold_list(tenant=console.tenant, active=True)}
    context |= {"runs": retention_run_list(tenant=console.tenant)[:RUNS_SHOWN]}
    return render(request, "dashboard/retention.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def retention_assistant(request: HttpRequest, slug: str, assistant_id: str) -> HttpResponse:
    """An assistant's own limits for its pages, facts and reply records; `remove` goes back to the tenant's."""
    console = console_or_404(request, slug, Permission.GOVERN)
    assistant = get_or_404(assistant_get, tenant=console.tenant, external_id=assistant_id)
    policy = next((p for p in retention_policy_list(tenant=console.tenant) if p.assistant_id == assistant.pk), None)
    if request.method == "POST" and "remove" in request.POST:
        retention_policy_delete(tenant=console.tenant, assistant=assistant, actor=actor_of(request))
        messages.success(request, f"{assistant.name} follows the tenant's policy again.")
        return redirect("console:retention", slug)
    form = AssistantRetentionForm(request.POST or None, initial=_initial(policy, ASSISTANT_TIERS))
    if form.is_bound and form.is_valid():
        retention_policy_set(
            tenant=console.tenant, assistant=assistant, limits=form.cleaned_data, actor=actor_of(request)
        )
        messages.success(request, f"Saved {assistant.name}'s retention limits.")
        return redirect("console:retention", slug)
    context = {"console": console, "assistant": assistant, "form": form, "policy": policy}
    return render(request, "dashboard/retention_assistant.html", context)


@require_POST
@login_required
def retention_run_now(request: HttpRequest, slug: str) -> HttpResponse:
    """Queue one batch now, with a reason (audited, as a single forget needs one); beat runs the policy daily anyway,
    and the history shows the run when it has run."""
    console = console_or_404(request, slug, Permission.GOVERN)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Running retention now needs a reason.")
        return redirect("console:retention", slug)
    reason = form.cleaned_data["reason"]
    retention_run_request(
        tenant=console.tenant, actor=actor_of(request), reason=reason, request_id=request_id_of(request)
    )
    messages.success(request, "A retention run was queued; it appears in the history below once it has run.")
    return redirect("console:retention", slug)


@require_GET
@login_required
def retention_run(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    run = get_or_404(retention_run_get, tenant=console.tenant, id=run_id)
    context = {"console": console, "run": run, "receipts": run.receipts.order_by("created_at"), "tiers": TIER_WORDS}
    context["derived"] = [(DERIVED_WORDS.get(name, name), count) for name, count in sorted(run.derived.items())]
    return render(request, "dashboard/retention_run.html", context)


@require_POST
@login_required
def legal_hold(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """Place (or with `release`, release) the user's legal hold, with a reason; back to the user's page."""
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    form = LegalHoldForm(request.POST)
    release = "release" in request.POST
    if not form.is_valid():
        messages.error(request, "A reason is required to " + ("release" if release else "place") + " a legal hold.")
        return redirect("console:user", slug, end_user.pk)
    who = {"actor": actor_of(request), "reason": form.cleaned_data["reason"], "request_id": request_id_of(request)}
    try:
        if release:
            legal_hold_release(end_user=end_user, released_by=request.user, **who)
            note = f"Released the legal hold on {end_user}: forgetting, erasure and retention apply again."
            messages.success(request, note)
        else:
            legal_hold_place(end_user=end_user, placed_by=request.user, **who)
            messages.success(request, f"{end_user} is under legal hold: nothing about them is forgotten or erased.")
    except LegalHoldError as exc:
        messages.error(request, f"{str(exc).capitalize()}.")
    except EndUserClosed:
        messages.error(request, f"{end_user} has just been erased.")
        return redirect("console:users", slug)
    return redirect("console:user", slug, end_user.pk)
