"""Webhook endpoints, for admins (manage): the list, a new endpoint (its secret shown once), and a page per endpoint
with its settings, a new secret, a test event and the delivery log (each attempt; replay a delivery)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_POST

from dashboard.console import Console, actor_of, console_or_404, get_or_404, page_or_partial, request_id_of
from memory.models import WebhookEndpoint
from memory.roles import Permission
from memory.selectors.webhooks import (
    webhook_delivery_get,
    webhook_delivery_list,
    webhook_endpoint_get,
    webhook_endpoint_list,
)
from memory.services.webhook_delivery import WebhookError, webhook_delivery_replay
from memory.services.webhook_endpoints import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_secret_rotate,
    webhook_endpoint_test,
    webhook_endpoint_update,
)
from memory.webhooks import EVENT_TYPES

LIST = "dashboard/webhooks.html"
DETAIL = "dashboard/webhook.html"
DELIVERIES_PER_PAGE = 25


class WebhookForm(forms.Form):
    url = forms.CharField(
        max_length=500, label="URL", help_text="https://… (plain http only to a private address in development)."
    )
    description = forms.CharField(max_length=200, required=False, help_text="e.g. helpdesk, CRM sync.")
    event_types = forms.MultipleChoiceField(
        choices=[(kind, f"{kind}: {meaning}") for kind, meaning in EVENT_TYPES.items()],
        widget=forms.CheckboxSelectMultiple,
        label="Events",
    )
    enabled = forms.BooleanField(required=False, initial=True, help_text="Off: nothing is sent to it.")


def _endpoint_form(endpoint: WebhookEndpoint) -> WebhookForm:
    fields = ("url", "description", "event_types", "enabled")
    return WebhookForm(initial={field: getattr(endpoint, field) for field in fields})


def _list_page(request: HttpRequest, console: Console, form: WebhookForm, partial: str, **extra) -> HttpResponse:
    context = {"console": console, "form": form, "endpoints": webhook_endpoint_list(tenant=console.tenant), **extra}
    return render(request, page_or_partial(request, LIST, partial), context)


@require_GET
@login_required
def webhooks(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.MANAGE)
    return _list_page(request, console, WebhookForm(), "endpoint_list")


@require_POST
@login_required
def webhook_create(request: HttpRequest, slug: str) -> HttpResponse:
    """Add an endpoint; the page that answers is the only place its secret is shown (and it is not cached)."""
    console = console_or_404(request, slug, Permission.MANAGE)
    form = WebhookForm(request.POST)
    created = None
    if form.is_valid():
        try:
            created = webhook_endpoint_create(
                tenant=console.tenant, actor=actor_of(request), created_by=request.user,
                request_id=request_id_of(request), **form.cleaned_data,
            )  # fmt: skip
        except WebhookError as exc:
            form.add_error(None, str(exc))
    response = _list_page(request, console, WebhookForm() if created else form, "endpoint_create", created=created)
    patch_cache_control(response, no_store=True)
    return response


def _detail(
    request: HttpRequest, console: Console, endpoint: WebhookEndpoint, *, form=None, partial="delivery_log", **extra
) -> HttpResponse:
    deliveries = Paginator(webhook_delivery_list(endpoint=endpoint), DELIVERIES_PER_PAGE)
    context = {
        "console": console,
        "endpoint": endpoint,
        "form": form or _endpoint_form(endpoint),
        "deliveries": deliveries.get_page(request.GET.get("page")),
        **extra,
    }
    return render(request, page_or_partial(request, DETAIL, partial), context)


@require_GET
@login_required
def webhook(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.MANAGE)
    endpoint = get_or_404(webhook_endpoint_get, tenant=console.tenant, id=endpoint_id)
    return _detail(request, console, endpoint)


@require_POST
@login_required
def webhook_update(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.MANAGE)
    endpoint = get_or_404(webhook_endpoint_get, tenant=console.tenant, id=endpoint_id)
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            webhook_endpoint_update(
                endpoint=endpoint, actor=actor_of(request), request_id=request_id_of(request), **form.cleaned_data
            )
            messages.success(request, "Endpoint saved.")
            return redirect("console:webhook", slug, endpoint.pk)
        except WebhookError as exc:
            form.add_error(None, str(exc))
    return _detail(request, console, endpoint, form=form)


@require_POST
@login_required
def webhook_rotate(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    """A new secret, shown once on the page that answers (not cached); the old one signs nothing from now on."""
    console = console_or_404(request, slug, Permission.MANAGE)
    endpoint = get_or_404(webhook_endpoint_get, tenant=console.tenant, id=endpoint_id)
    rotated = webhook_endpoint_secret_rotate(
        endpoint=endpoint, actor=actor_of(request), request_id=request_id_of(request)
    )
    response = _detail(request, console, endpoint, created=rotated, partial="secret")
    patch_cache_control(response, no_store=True)
    return response


@require_POST
@login_required
def webhook_delete(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.MANAGE)
    endpoint = get_or_404(webhook_endpoint_get, tenant=console.tenant, id=endpoint_id)
    webhook_endpoint_delete(endpoint=endpoint, actor=actor_of(request), request_id=request_id_of(request))
    messages.success(request, f"Endpoint {endpoint.url} deleted.")
    return redirect("console:webhooks", slug)


@require_POST
@login_required
def webhook_test(request: HttpRequest, slug: str, endpoint_id: int) -> HttpResponse:
    """Send a webhook.test event now; the delivery log shows how it went."""
    console = console_or_404(request, slug, Permission.MANAGE)
    endpoint = get_or_404(webhook_endpoint_get, tenant=console.tenant, id=endpoint_id)
    try:
        webhook_endpoint_test(endpoint=endpoint, actor=actor_of(request), request_id=request_id_of(request))
        messages.success(request, "Test event sent: its delivery is at the top of the log.")
    except WebhookError as exc:
        messages.error(request, str(exc))
    return _after_action(request, console, endpoint)


@require_POST
@login_required
def webhook_replay(request: HttpRequest, slug: str, delivery_id: int) -> HttpResponse:
    """Send a delivery's event again (same event id) as a new attempt."""
    console = console_or_404(request, slug, Permission.MANAGE)
    delivery = get_or_404(webhook_delivery_get, tenant=console.tenant, id=delivery_id)
    try:
        webhook_delivery_replay(delivery=delivery, actor=actor_of(request), request_id=request_id_of(request))
        messages.success(request, f"Event {delivery.event.public_id} sent again.")
    except WebhookError as exc:
        messages.error(request, str(exc))
    return _after_action(request, console, delivery.endpoint)


def _after_action(request: HttpRequest, console: Console, endpoint: WebhookEndpoint) -> HttpResponse:
    if request.htmx:
        return _detail(request, console, endpoint)
    return redirect("console:webhook", console.tenant.slug, endpoint.pk)
