"""API tokens, for admins (manage): list a tenant's tokens, create one (its secret is shown once), revoke one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_POST

from dashboard.console import Console, actor_of, console_or_404, get_or_404, page_or_partial
from dashboard.forms import ReasonForm
from memory.models import ApiToken
from memory.roles import Permission
from memory.selectors.governance import api_token_get, api_token_list
from memory.services.api_tokens import SCOPES, api_token_create, api_token_revoke

TEMPLATE = "dashboard/tokens.html"


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Who or what will use it, e.g. helpdesk-agent.")
    scopes = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in SCOPES],
        widget=forms.CheckboxSelectMultiple,
        help_text="read: memory and users · write: turns and edits · govern: audit, exports, erasure.",
    )
    expires_in_days = forms.IntegerField(
        required=False, min_value=1, max_value=365, label="Expires in (days)", help_text="1 to 365; empty: never."
    )


@dataclass(frozen=True)
class TokenRow:
    token: ApiToken
    status: str  # active, expired or revoked


def _status(token: ApiToken, now: datetime) -> str:
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= now:
        return "expired"
    return "active"


def _token_rows(console: Console) -> list[TokenRow]:
    now = timezone.now()
    return [TokenRow(token=token, status=_status(token, now)) for token in api_token_list(tenant=console.tenant)]


def _page(request: HttpRequest, console: Console, form: TokenCreateForm, partial: str, **extra) -> HttpResponse:
    context = {"console": console, "form": form, "rows": _token_rows(console), "reason_form": ReasonForm(), **extra}
    return render(request, page_or_partial(request, TEMPLATE, partial), context)


@require_GET
@login_required
def tokens(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.MANAGE)
    return _page(request, console, TokenCreateForm(), "token_list")


@require_POST
@login_required
def token_create(request: HttpRequest, slug: str) -> HttpResponse:
    """Create a token; the page that answers is the only place its secret is ever shown (and it is not cached)."""
    console = console_or_404(request, slug, Permission.MANAGE)
    form = TokenCreateForm(request.POST)
    created = None
    if form.is_valid():
        data = form.cleaned_data
        days = data["expires_in_days"]
        try:
            created = api_token_create(
                tenant=console.tenant, name=data["name"], scopes=data["scopes"], actor=actor_of(request),
                created_by=request.user, expires_at=timezone.now() + timedelta(days=days) if days else None,
            )  # fmt: skip
        except ValidationError as exc:
            form.add_error(None, exc)
    if created is not None:
        form = TokenCreateForm()
    response = _page(request, console, form, "token_create", created=created)
    patch_cache_control(response, no_store=True)
    return response


@require_POST
@login_required
def token_revoke(request: HttpRequest, slug: str, token_id: int) -> HttpResponse:
    """Revoke a token at once, with a reason for the audit log; revoking it again changes nothing."""
    console = console_or_404(request, slug, Permission.MANAGE)
    token = get_or_404(api_token_get, tenant=console.tenant, id=token_id)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why the token is revoked: the reason goes into the audit log.")
    elif api_token_revoke(token=token, actor=actor_of(request), reason=form.cleaned_data["reason"]):
        messages.success(request, f"Token {token.name} revoked: the API no longer accepts it.")
    if request.htmx:
        return _page(request, console, TokenCreateForm(), "token_list")
    return redirect("console:tokens", slug)
