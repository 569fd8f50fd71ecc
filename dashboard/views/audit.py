"""The audit log: filter, page through, export as CSV, and verify the hash chain. Govern permission (dpo, admin)."""

from __future__ import annotations

import csv
import json
from itertools import chain

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.console import Console, console_or_404, page_or_partial
from dashboard.forms import AuditFilterForm
from memory.roles import Permission
from memory.selectors.console import AuditFilter, audit_actions, audit_entries, audit_entry_at, audit_summary
from memory.selectors.governance import audit_verify

ENTRIES_PER_PAGE = 50
CSV_COLUMNS = ["seq", "time", "actor_kind", "actor", "action", "end_user", "subject_id", "target_type", "target_id"]
CSV_COLUMNS += ["reason", "before", "after", "detail", "request_id", "erased", "hash"]


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _filters(console: Console, request: HttpRequest) -> tuple[AuditFilterForm, AuditFilter]:
    """The form and the filter of its valid fields: an invalid field is an error shown, never a dropped filter."""
    form = AuditFilterForm(request.GET, actions=audit_actions(tenant=console.tenant))
    form.is_valid()
    return form, AuditFilter(**form.cleaned_data)


@require_GET
@login_required
def audit_log(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    form, filters = _filters(console, request)
    entries = audit_entries(tenant=console.tenant, filters=filters)
    page = Paginator(entries, ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    summary = audit_summary(entries=entries)
    context = {"console": console, "form": form, "page": page, "query": query.urlencode(), "summary": summary}
    return render(request, page_or_partial(request, "dashboard/audit.html", "results"), context)


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_cell(value) -> object:
    """A value a spreadsheet shows as text: a leading formula character is escaped with a quote."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _text(value) -> str:
    """A JSON value as a cell: text as it is, anything else as JSON (never Python's repr)."""
    if value is None or isinstance(value, str):
        return value or ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _csv_row(entry) -> list:
    user = str(entry.end_user) if entry.end_user else ("erased user" if entry.subject_id else "")
    actor = entry.actor_label or entry.operator_name
    before, after, detail = _text(entry.before), _text(entry.after), _text(entry.detail or None)
    row = [
        entry.seq, entry.created_at.isoformat(), entry.actor_kind, actor, entry.action, user, entry.subject_id or "",
        entry.target_type, entry.target_id or "", entry.reason, before, after, detail, entry.request_id,
        entry.erased, entry.hash,
    ]  # fmt: skip
    return [csv_cell(cell) for cell in row]


@require_GET
@login_required
def audit_csv(request: HttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    """The filtered audit log as CSV, streamed; 400 when a filter is invalid (it would otherwise widen the file)."""
    console = console_or_404(request, slug, Permission.GOVERN)
    form, filters = _filters(console, request)
    if form.errors:
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return HttpResponseBadRequest(f"Invalid audit filter ({problems})", content_type="text/plain; charset=utf-8")
    entries = audit_entries(tenant=console.tenant, filters=filters).iterator(chunk_size=2000)
    writer = csv.writer(_Echo())
    rows = (writer.writerow(row) for row in chain([CSV_COLUMNS], map(_csv_row, entries)))
    response = StreamingHttpResponse(rows, content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="audit-{console.tenant.slug}-{stamp}.csv"'
    return response


@require_GET
@login_required
def audit_chain(request: HttpRequest, slug: str) -> HttpResponse:
    """Walk the tenant's hash chain and show the first broken link, if any."""
    console = console_or_404(request, slug, Permission.GOVERN)
    report = audit_verify(tenant=console.tenant)
    broken = audit_entry_at(tenant=console.tenant, seq=report.first_broken_seq) if not report.ok else None
    context = {"console": console, "report": report, "broken": broken}
    return render(request, page_or_partial(request, "dashboard/audit_verify.html", "verify"), context)
