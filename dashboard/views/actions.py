"""Changing memory by hand: edit, pin, unpin, lock, unlock and forget, each with a reason, through the governance
services (which write the audit). Supervisors and admins only. GET shows the form (an HTMX modal, or a page), POST
applies it and goes back to where the operator came from."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from dashboard.console import Console, actor_of, console_or_404, page_or_partial, request_id_of, safe_next
from dashboard.forms import KnowledgeEditForm, ProfileEditForm, ReasonForm, SegmentEditForm
from memory.models import EndUser, KnowledgeEntry, Page, ProfileVersion, Segment
from memory.roles import Permission
from memory.selectors.console import (
    current_profile,
    end_user_in_tenant,
    knowledge_in_tenant,
    page_in_tenant,
    profile_version_in_tenant,
    segment_in_tenant,
)
from memory.services.governance import (
    GovernanceError,
    knowledge_edit,
    knowledge_forget,
    memory_flag_set,
    page_forget,
    profile_edit,
    profile_version_forget,
    segment_edit,
    segment_forget,
)


@dataclass(frozen=True)
class Kind:
    """A kind of memory item the console can change: how to find it in a tenant and what may be done to it."""

    label: str
    find: object
    actions: frozenset[str]


KINDS = {
    "page": Kind("page", lambda t, pk: page_in_tenant(tenant=t, page_id=pk), frozenset({"pin", "unpin", "forget"})),
    "segment": Kind(
        "segment",
        lambda t, pk: segment_in_tenant(tenant=t, segment_id=pk),
        frozenset({"edit", "pin", "unpin", "lock", "unlock", "forget"}),
    ),
    "knowledge": Kind(
        "knowledge entry",
        lambda t, pk: knowledge_in_tenant(tenant=t, entry_id=pk),
        frozenset({"edit", "pin", "unpin", "lock", "unlock", "forget"}),
    ),
    "profile_version": Kind(
        "profile version",
        lambda t, pk: profile_version_in_tenant(tenant=t, version_id=pk),
        frozenset({"lock", "unlock", "forget"}),
    ),
}
FLAGS = {"pin": ("pinned", True), "unpin": ("pinned", False), "lock": ("locked", True), "unlock": ("locked", False)}
DONE = {"pin": "pinned", "unpin": "unpinned", "lock": "locked", "unlock": "unlocked"}
FORGET = {
    "page": lambda item, **who: page_forget(page=item, **who),
    "segment": lambda item, **who: segment_forget(segment=item, **who),
    "knowledge": lambda item, **who: knowledge_forget(entry=item, **who),
    "profile_version": lambda item, **who: profile_version_forget(version=item, **who),
}
MISSING = (Page.DoesNotExist, Segment.DoesNotExist, KnowledgeEntry.DoesNotExist, ProfileVersion.DoesNotExist)


def _item_or_404(console: Console, kind: str, item_id: int, action: str):
    if kind not in KINDS or action not in KINDS[kind].actions:
        raise Http404("No such action")
    try:
        return KINDS[kind].find(console.tenant, item_id)
    except MISSING:
        raise Http404(f"No such {KINDS[kind].label}") from None


def _end_user_or_404(console: Console, end_user_id: int) -> EndUser:
    try:
        return end_user_in_tenant(tenant=console.tenant, end_user_id=end_user_id)
    except EndUser.DoesNotExist:
        raise Http404("No such end user") from None


def _owner(item) -> EndUser:
    return item.space.end_user if isinstance(item, Page | Segment) else item.end_user


def _form(kind: str, action: str, item, data=None):
    if action != "edit":
        return ReasonForm(data)
    if kind == "segment":
        return SegmentEditForm(data, initial={"summary": item.summary, "keywords": ", ".join(item.keywords)})
    return KnowledgeEditForm(data, initial={"text": item.text})


def _apply(request: HttpRequest, kind: str, action: str, item, form) -> str:
    """Call the governance service for the action; returns what to tell the operator."""
    who = {"actor": actor_of(request), "reason": form.cleaned_data["reason"], "request_id": request_id_of(request)}
    label = KINDS[kind].label
    if action in FLAGS:
        flag, value = FLAGS[action]
        changed = memory_flag_set(item=item, flag=flag, value=value, **who)
        return f"The {label} is now {DONE[action]}." if changed else f"The {label} was already {DONE[action]}."
    if action == "forget":
        FORGET[kind](item, **who)
        return f"The {label} was forgotten: its content is deleted and the audit keeps only who, when and why."
    if kind == "segment":
        segment_edit(segment=item, summary=form.cleaned_data["summary"], keywords=form.cleaned_data["keywords"], **who)
    else:
        knowledge_edit(entry=item, text=form.cleaned_data["text"], **who)
    return f"The {label} was changed."


def _done(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


@require_http_methods(["GET", "POST"])
@login_required
def memory_action(request: HttpRequest, slug: str, kind: str, item_id: int, action: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.WRITE)
    item = _item_or_404(console, kind, item_id, action)
    owner_url = reverse("console:user", args=[slug, _owner(item).pk])
    form = _form(kind, action, item, request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        try:
            messages.success(request, _apply(request, kind, action, item, form))
            return _done(request, owner_url if action == "forget" else safe_next(request, owner_url))
        except GovernanceError as exc:
            form.add_error(None, str(exc))
    context = {"console": console, "kind": kind, "label": KINDS[kind].label, "action": action, "item": item}
    context |= {"form": form, "next": safe_next(request, owner_url), "owner": _owner(item)}
    return render(request, page_or_partial(request, "dashboard/action.html", "form"), context)


@require_http_methods(["GET", "POST"])
@login_required
def profile_change(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """Write a new profile version by hand (the previous versions stay)."""
    console = console_or_404(request, slug, Permission.WRITE)
    end_user = _end_user_or_404(console, end_user_id)
    current = current_profile(end_user=end_user)
    user_url = reverse("console:user", args=[slug, end_user.pk])
    form = ProfileEditForm(request.POST or None, initial={"text": current.text if current else ""})
    if form.is_bound and form.is_valid():
        who = {"actor": actor_of(request), "reason": form.cleaned_data["reason"], "request_id": request_id_of(request)}
        try:
            version = profile_edit(end_user=end_user, text=form.cleaned_data["text"], **who)
            messages.success(request, f"Saved the profile as version {version.number}.")
            return _done(request, safe_next(request, user_url))
        except GovernanceError as exc:
            form.add_error(None, str(exc))
    context = {"console": console, "kind": "profile", "label": "profile", "action": "edit", "item": current}
    context |= {"form": form, "next": safe_next(request, user_url), "owner": end_user}
    return render(request, page_or_partial(request, "dashboard/action.html", "form"), context)
