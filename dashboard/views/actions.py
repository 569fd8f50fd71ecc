"""Changing memory by hand: edit, pin, unpin, lock, unlock, mark outdated or current and forget, each with a reason,
through the governance and validity services (which write the audit). Supervisors and admins only. GET shows the
form (an HTMX modal, or a page), POST applies it and goes back to where the operator came from."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from dashboard.console import Console, actor_of, console_or_404, get_or_404, page_or_partial, request_id_of, safe_next
from dashboard.forms import KnowledgeEditForm, OutdatedForm, ProfileEditForm, ReasonForm, SegmentEditForm
from dashboard.templatetags.console import action_label
from memory.items import FLAG_ACTIONS, ITEM_KINDS, ItemKind
from memory.models import EndUser, Escalation, EscalationState
from memory.not_found import not_found_message
from memory.roles import Permission
from memory.selectors.escalations import escalation_get
from memory.selectors.items import profile_version_list
from memory.selectors.people import end_user_get
from memory.selectors.retention import legal_hold_active
from memory.services.governance import GovernanceError, profile_edit
from memory.services.legal_hold import LegalHoldActive
from memory.services.turns import EndUserClosed
from memory.services.validity import escalation_resolve

EDIT_FORMS = {"segment": SegmentEditForm, "knowledge": KnowledgeEditForm}  # one per editable kind


def _kind_or_404(kind: str, action: str) -> ItemKind:
    if kind not in ITEM_KINDS or action not in ITEM_KINDS[kind].actions:
        raise Http404("No such action")
    return ITEM_KINDS[kind]


def _form(kind: ItemKind, action: str, item, data=None) -> ReasonForm:
    if action == "outdated":
        return OutdatedForm(data)
    if action != "edit":
        return ReasonForm(data)
    return EDIT_FORMS[kind.name](data, initial={field: getattr(item, field) for field in kind.editable})


def _apply(request: HttpRequest, kind: ItemKind, action: str, item, form: ReasonForm) -> str:
    """Call the item's update or forget service for the action; returns what to tell the operator."""
    who = {"actor": actor_of(request), "reason": form.cleaned_data["reason"], "request_id": request_id_of(request)}
    if action == "forget":
        impact = kind.item_forget(item, **who).describe(kind.name)
        return f"The {kind.label} was forgotten ({impact}). The audit keeps only who, when, why and these counts."
    if action == "outdated":
        changed = kind.item_mark(item, action, replacement=form.cleaned_data["replacement"], **who)
        return f"The {kind.label} is now outdated." if changed else f"The {kind.label} was already outdated."
    if action == "current":
        changed = kind.item_mark(item, action, **who)
        return f"The {kind.label} is current again." if changed else f"The {kind.label} was already current."
    if action == "edit":
        kind.item_update(item, **{field: form.cleaned_data[field] for field in kind.editable}, **who)
        return f"The {kind.label} was changed."
    flag, value = FLAG_ACTIONS[action]
    state = flag if value else f"un{flag}"  # pinned, unpinned, locked, unlocked
    changed = kind.item_update(item, **{flag: value}, **who)
    return f"The {kind.label} is now {state}." if changed else f"The {kind.label} was already {state}."


def _escalation_or_404(request: HttpRequest, console: Console, kind: str, item) -> Escalation | None:
    """The open escalation this action settles (`escalation` in the query or form), None when none is named; 404
    when it is not an open flag on this very item."""
    escalation_id = request.POST.get("escalation") or request.GET.get("escalation")
    if not escalation_id:
        return None
    if not escalation_id.isdigit():
        raise Http404(not_found_message(Escalation.DoesNotExist))
    escalation = get_or_404(escalation_get, tenant=console.tenant, id=int(escalation_id))
    if (escalation.target_type, escalation.target_id, escalation.state) != (kind, item.pk, EscalationState.OPEN):
        raise Http404(not_found_message(Escalation.DoesNotExist))
    return escalation


@transaction.atomic
def _apply_settling(request: HttpRequest, kind: ItemKind, action: str, item, form, escalation) -> str:
    """Apply the action and, when it answers a flag, resolve the flag with it: both, or neither."""
    done = _apply(request, kind, action, item, form)
    if escalation is None:
        return done
    escalation_resolve(
        escalation=escalation, actor=actor_of(request), action=action, request_id=request_id_of(request),
        resolution=f"{action_label(action)}: {form.cleaned_data['reason']}",
    )  # fmt: skip
    return f"{done} The flag is resolved."


def _done(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


@require_http_methods(["GET", "POST"])
@login_required
def memory_action(request: HttpRequest, slug: str, kind: str, item_id: int, action: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.WRITE)
    item_kind = _kind_or_404(kind, action)
    item = get_or_404(item_kind.get, tenant=console.tenant, id=item_id)
    escalation = _escalation_or_404(request, console, kind, item)
    owner_url = reverse("console:user", args=[slug, item.end_user.pk])
    form = _form(item_kind, action, item, request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        try:
            messages.success(request, _apply_settling(request, item_kind, action, item, form, escalation))
            forgotten = action == "forget" and escalation is None  # the item's page is gone; the queue is not
            return _done(request, owner_url if forgotten else safe_next(request, owner_url))
        except (GovernanceError, LegalHoldActive) as exc:
            form.add_error(None, str(exc))
        except EndUserClosed:  # erased while the form was open
            raise Http404(not_found_message(EndUser.DoesNotExist)) from None
    context = {"console": console, "kind": kind, "label": item_kind.label, "action": action, "item": item}
    context |= {"form": form, "next": safe_next(request, owner_url), "owner": item.end_user, "escalation": escalation}
    if action == "forget":  # the same plan the forget will carry out, so the preview matches what happens
        context["impact"] = item_kind.item_impact(item).describe(kind)
        context["hold"] = legal_hold_active(end_user=item.end_user)
    return render(request, page_or_partial(request, "dashboard/action.html", "form"), context)


@require_http_methods(["GET", "POST"])
@login_required
def profile_change(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """Write a new profile version by hand (the previous versions stay)."""
    console = console_or_404(request, slug, Permission.WRITE)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    current = profile_version_list(tenant=console.tenant, end_user=end_user).first()
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
        except EndUserClosed:  # erased while the form was open
            raise Http404(not_found_message(EndUser.DoesNotExist)) from None
    context = {"console": console, "kind": "profile", "label": "profile", "action": "edit", "item": current}
    context |= {"form": form, "next": safe_next(request, user_url), "owner": end_user}
    return render(request, page_or_partial(request, "dashboard/action.html", "form"), context)
