"""The review queue (govern: dpo and admin): new facts and profile versions awaiting review, with the turns they came
from; approve, edit and approve, or reject each with a reason (memory.services.review audits every decision)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.console import actor_of, console_or_404, get_or_404, request_id_of
from dashboard.forms import ReviewForm
from memory.items import ITEM_KINDS
from memory.roles import Permission
from memory.selectors.review import pending_knowledge_list, pending_profile_version_list
from memory.services.governance import GovernanceError
from memory.services.turns import EndUserClosed

SHOWN = 100  # the oldest pending items of each kind; the page says how many more wait

# The URL's word for each reviewable kind of the registry (memory.items), which names its selector and service.
REVIEWS = {"knowledge": ITEM_KINDS["knowledge"], "profile": ITEM_KINDS["profile_version"]}


@require_GET
@login_required
def review_queue(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    facts, profiles = pending_knowledge_list(tenant=console.tenant), pending_profile_version_list(tenant=console.tenant)
    context = {
        "console": console,
        "facts": list(facts[:SHOWN]),
        "facts_count": facts.count(),
        "profiles": list(profiles[:SHOWN]),
        "profiles_count": profiles.count(),
        "shown": SHOWN,
    }
    return render(request, "dashboard/review.html", context)


@require_POST
@login_required
def review_decide(request: HttpRequest, slug: str, kind: str, item_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    if kind not in REVIEWS:
        raise Http404("No such kind of memory")
    item_kind = REVIEWS[kind]
    item = get_or_404(item_kind.get, tenant=console.tenant, id=item_id)
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return redirect("console:review", slug)
    data = form.cleaned_data
    text = data["text"] if data["decision"] == "approve" and data["text"].strip() else None
    who = {"actor": actor_of(request), "reason": data["reason"], "request_id": request_id_of(request)}
    try:
        item_kind.item_review(item, decision=data["decision"], text=text, **who)
    except GovernanceError as exc:
        messages.error(request, f"Nothing was changed: {exc}.")
    except EndUserClosed:
        raise Http404("No such end user") from None
    else:
        messages.success(
            request,
            "Approved: it may now be used in prompts."
            if data["decision"] == "approve"
            else "Rejected: it will never be used in prompts.",
        )
    return redirect("console:review", slug)
