"""The team page: a tenant admin lists the operators with their roles, invites one by email, changes a role and
removes a membership (memory.services.team audits each change and keeps an admin in the tenant). Admins only."""

from __future__ import annotations

import smtplib

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from dashboard.console import Console, actor_of, console_or_404
from dashboard.forms import InvitationForm, RoleForm
from dashboard.invitations import invitation_send
from memory.models import Membership, Role
from memory.not_found import not_found_message
from memory.roles import Permission
from memory.selectors.team import membership_list
from memory.services.team import Invitation, TeamError, membership_invite, membership_remove, membership_role_set


def _render(request: HttpRequest, console: Console, form: InvitationForm | None = None) -> HttpResponse:
    context = {"console": console, "members": membership_list(tenant=console.tenant), "roles": Role.choices}
    context["form"] = form or InvitationForm()
    template = "dashboard/team.html#team" if request.htmx else "dashboard/team.html"
    return render(request, template, context)


def _after(request: HttpRequest, console: Console, *, changed_self: bool = False) -> HttpResponse:
    """The refreshed team (HTMX) or a redirect to it; after changing one's own role, the whole console from home
    (the team page may no longer be theirs)."""
    if changed_self:
        return HttpResponseClientRedirect(reverse("home")) if request.htmx else HttpResponseRedirect(reverse("home"))
    url = reverse("console:team", args=[console.tenant.slug])
    return _render(request, console) if request.htmx else HttpResponseRedirect(url)


def _invited(request: HttpRequest, invitation: Invitation) -> str:
    """Send the invitation when the account has no password yet; what to tell the admin."""
    name = invitation.membership.user.get_username()
    if not invitation.needs_password:
        return f"{name} joined as {invitation.membership.get_role_display()}: they log in with their password."
    try:
        invitation_send(request, invitation.membership)
    except (OSError, smtplib.SMTPException):
        return f"{name} was invited, but the email could not be sent: ask them to use “Forgot your password?”."
    return f"{name} was invited: an email with a link to set their password is on its way."


@require_http_methods(["GET", "POST"])
@login_required
def team(request: HttpRequest, slug: str) -> HttpResponse:
    """The operators and the invitation form; POST invites one."""
    console = console_or_404(request, slug, Permission.MANAGE)
    form = InvitationForm(request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        try:
            invitation = membership_invite(tenant=console.tenant, actor=actor_of(request), **form.cleaned_data)
        except TeamError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _invited(request, invitation))
            return _after(request, console)
    return _render(request, console, form)


@require_POST
@login_required
def team_role(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Give one operator another role (from their next request on)."""
    console = console_or_404(request, slug, Permission.MANAGE)
    form = RoleForm(request.POST)
    role = form.cleaned_data["role"] if form.is_valid() else ""
    try:
        changed = membership_role_set(tenant=console.tenant, user_id=user_id, role=role, actor=actor_of(request))
    except TeamError as exc:
        messages.error(request, f"Nothing was changed: {exc}.")
        return _after(request, console)
    except Membership.DoesNotExist as missing:
        raise Http404(not_found_message(missing)) from None
    if changed:
        messages.success(request, "The role was changed: it applies from their next page on.")
    return _after(request, console, changed_self=changed and user_id == request.user.pk)


@require_POST
@login_required
def team_remove(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Take one operator out of the tenant (their account stays)."""
    console = console_or_404(request, slug, Permission.MANAGE)
    try:
        membership_remove(tenant=console.tenant, user_id=user_id, actor=actor_of(request))
    except TeamError as exc:
        messages.error(request, f"Nothing was changed: {exc}.")
        return _after(request, console)
    except Membership.DoesNotExist as missing:
        raise Http404(not_found_message(missing)) from None
    messages.success(request, "The operator was removed from this tenant.")
    return _after(request, console, changed_self=user_id == request.user.pk)
