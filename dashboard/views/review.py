"""The review queue (govern: dpo and admin): new facts and profile versions awaiting review, with the turns they came
from and, for a profile version, its diff against the current profile; approve, edit and approve, or reject each with
a reason (memory.services.review audits every decision). A decision swaps its row in place (HTMX) or redirects back
to the same place in the queue; rejecting a fact may also forget its source turns, after a preview."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.console import actor_of, console_or_404, get_or_404, request_id_of
from dashboard.diffs import pending_profile_diff
from dashboard.forms import ReviewForm
from memory.items import ITEM_KINDS
from memory.models import EndUser
from memory.not_found import not_found_message
from memory.roles import Permission
from memory.selectors.review import approved_profiles_of, pending_knowledge_list, pending_profile_version_list
from memory.services.governance import GovernanceError
from memory.services.legal_hold import LegalHoldActive
from memory.services.review import knowledge_reject_and_forget, knowledge_reject_preview
from memory.services.turns import EndUserClosed

SHOWN = 100  # the oldest pending items of each kind; the page says how many more wait

# The URL's word for each reviewable kind of the registry (memory.items), which names its selector and service.
REVIEWS = {"knowledge": ITEM_KINDS["knowledge"], "profile": ITEM_KINDS["profile_version"]}
SECTIONS = {"knowledge": "pending-facts", "profile": "pending-profiles"}
PENDING = {"knowledge": pending_knowledge_list, "profile": pending_profile_version_list}


def _with_diffs(profiles: list) -> list:
    """Each pending version with `diff`, against its user's current approved profile."""
    current = approved_profiles_of(end_user_ids=[version.end_user_id for version in profiles])
    for version in profiles:
        version.diff = pending_profile_diff(version, current.get(version.end_user_id))
    return profiles


@require_GET
@login_required
def review_queue(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    facts, profiles = pending_knowledge_list(tenant=console.tenant), pending_profile_version_list(tenant=console.tenant)
    context = {
        "console": console,
        "facts": list(facts[:SHOWN]),
        "facts_count": facts.count(),
        "profiles": _with_diffs(list(profiles[:SHOWN])),
        "profiles_count": profiles.count(),
        "shown": SHOWN,
    }
    return render(request, "dashboard/review.html", context)


def _item_or_404(console, kind: str, item_id: int):
    if kind not in REVIEWS:
        raise Http404("No such kind of memory")
    return get_or_404(REVIEWS[kind].get, tenant=console.tenant, id=item_id)


def _place_after(console, kind: str, item) -> str:
    """The queue's URL at the row that now takes the decided item's place (the next pending one), else its section."""
    following = PENDING[kind](tenant=console.tenant).filter(created_at__gte=item.created_at).exclude(pk=item.pk)
    nearest = following.values_list("pk", flat=True).first()
    anchor = f"review-{kind}-{nearest}" if nearest else SECTIONS[kind]
    return f"{reverse('console:review', args=[console.tenant.slug])}#{anchor}"


def _decide(request: HttpRequest, kind: str, item, data: dict):
    """Carry out the decision; returns (the decided item or None, the forget's impact or None, an error or "")."""
    text = data["text"] if data["decision"] == "approve" and data["text"].strip() else None
    who = {"actor": actor_of(request), "reason": data["reason"], "request_id": request_id_of(request)}
    try:
        if data["decision"] == "reject_forget" and kind == "knowledge":
            return *knowledge_reject_and_forget(entry=item, **who), ""
        decision = "reject" if data["decision"] == "reject_forget" else data["decision"]
        return REVIEWS[kind].item_review(item, decision=decision, text=text, **who), None, ""
    except (GovernanceError, LegalHoldActive) as exc:
        return None, None, f"Nothing was changed: {exc}."
    except EndUserClosed:
        raise Http404(not_found_message(EndUser.DoesNotExist)) from None


@require_POST
@login_required
def review_decide(request: HttpRequest, slug: str, kind: str, item_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    item = _item_or_404(console, kind, item_id)
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return redirect(_place_after(console, kind, item))
    decided, forgotten, error = _decide(request, kind, item, form.cleaned_data)
    if request.htmx:
        said = forget_said(forgotten) if forgotten else ""
        context = {"console": console, "kind": kind, "item": decided or item, "error": error, "forgotten": said}
        return render(request, "dashboard/review.html#decided", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, _decided_message(decided, forgotten))
    return redirect(_place_after(console, kind, item))


def forget_said(impact) -> str:
    """What forgetting a fact's source turns does, in one line ("removes 2 turns; re-derives 1 topic; …")."""
    turns = f"removes {impact.pages} turn{'s' if impact.pages != 1 else ''}"
    return "; ".join([turns, *impact.describe("page").split("; ")[1:]])


def _decided_message(item, forgotten) -> str:
    if item.review_state == "approved":
        return "Approved: it may now be used in prompts."
    removed = getattr(getattr(item, "rejection", None), "removed_from_profile", [])
    also = f" It was also removed from the profile: {'; '.join(removed)}." if removed else ""
    gone = f" Its source turns were forgotten: {forget_said(forgotten)}." if forgotten else ""
    return f"Rejected: it will never be used in prompts.{also}{gone}"


@require_GET
@login_required
def review_reject_preview(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """What rejecting a fact would change (the profile text it withdraws, the turns withheld, kept or forgotten),
    with the form that confirms it."""
    console = console_or_404(request, slug, Permission.GOVERN)
    entry = _item_or_404(console, "knowledge", item_id)
    preview = knowledge_reject_preview(entry=entry)
    said = forget_said(preview.forget) if preview.forget and preview.forget.pages else ""
    context = {"console": console, "item": entry, "kind": "knowledge", "preview": preview, "forget_said": said}
    template = "dashboard/review_reject.html#preview" if request.htmx else "dashboard/review_reject.html"
    return render(request, template, context)
