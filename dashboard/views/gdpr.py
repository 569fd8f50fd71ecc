"""GDPR requests, for dpo and admin (govern): exports built in the background with progress, downloads until the
link expires (then 410), erasure with a dry run first and a receipt that stays."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.console import actor_of, console_or_404, get_or_404, page_or_partial, record_read, request_id_of
from dashboard.forms import LEGAL_BASES, ErasureForm
from memory.roles import Permission
from memory.selectors.governance import erasure_receipt_get, erasure_receipt_list, export_job_get, export_job_list
from memory.selectors.people import end_user_get
from memory.services.gdpr import receipt_verify, user_erase
from memory.services.gdpr_export import ExportUnavailable, export_file, export_request
from memory.services.legal_hold import LegalHoldActive, legal_hold_active
from memory.services.turns import EndUserClosed

EXPORTS_SHOWN = 50
RECEIPTS_SHOWN = 100


@require_GET
@login_required
def gdpr_home(request: HttpRequest, slug: str) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    context = {
        "console": console,
        "jobs": export_job_list(tenant=console.tenant)[:EXPORTS_SHOWN],
        "receipts": erasure_receipt_list(tenant=console.tenant)[:RECEIPTS_SHOWN],
    }
    return render(request, "dashboard/gdpr.html", context)


@require_GET
@login_required
def user_gdpr(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    jobs = export_job_list(tenant=console.tenant, end_user=end_user)[:EXPORTS_SHOWN]
    return render(request, "dashboard/user_gdpr.html", {"console": console, "end_user": end_user, "jobs": jobs})


@require_POST
@login_required
def export_start(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """Queue an export bundle of everything held about the user; the job page shows its progress."""
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    try:
        job = export_request(end_user=end_user, actor=actor_of(request), request_id=request_id_of(request))
    except EndUserClosed:
        messages.error(request, f"{end_user} has just been erased; there is nothing left to export.")
        return redirect("console:gdpr", slug)
    messages.success(request, f"Export of {end_user} queued.")
    return redirect("console:export", slug, job.pk)


@require_GET
@login_required
def export_job(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """The job's status; while it runs, the HTMX fragment polls itself."""
    console = console_or_404(request, slug, Permission.GOVERN)
    job = get_or_404(export_job_get, tenant=console.tenant, id=job_id)
    return render(
        request, page_or_partial(request, "dashboard/export.html", "status"), {"console": console, "job": job}
    )


@require_GET
@login_required
def export_download(request: HttpRequest, slug: str, job_id: int, token: str) -> HttpResponse:
    """The zip, while its link is valid; an expired link answers 410 Gone with a way to request a new export."""
    console = console_or_404(request, slug, Permission.GOVERN)
    job = get_or_404(export_job_get, tenant=console.tenant, id=job_id)
    try:
        path = export_file(job=job, token=token)
    except ExportUnavailable as exc:
        if not exc.gone:
            raise Http404(str(exc)) from None
        return render(request, "dashboard/export_gone.html", {"console": console, "job": job}, status=410)
    if job.end_user is not None:
        record_read(request, job.end_user, "GDPR export download", "export_job", job.pk)
    return FileResponse(path.open("rb"), as_attachment=True, filename=f"memoryos-export-{job.pk}.zip")


@require_http_methods(["GET", "POST"])
@login_required
def erase(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """GET: a dry run (what would be deleted, per table) and the confirm form. POST: erase, then the receipt."""
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    form = ErasureForm(request.POST or None, external_id=end_user.external_id)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            erasure = user_erase(
                end_user=end_user, actor=actor_of(request), legal_basis=data["legal_basis"], reason=data["reason"],
                dry_run=False,
            )  # fmt: skip
        except LegalHoldActive as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "The end user was erased. Keep this receipt.")
            return redirect("console:receipt", slug, erasure.receipt.pk)
    dry_run = user_erase(end_user=end_user, actor=actor_of(request), legal_basis="", dry_run=True)
    context = {"console": console, "end_user": end_user, "form": form, "counts": dry_run.counts}
    context["hold"] = legal_hold_active(end_user=end_user)
    context["legal_bases"] = LEGAL_BASES
    return render(request, page_or_partial(request, "dashboard/erase.html", "confirm"), context)


@require_GET
@login_required
def receipt(request: HttpRequest, slug: str, receipt_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    found = get_or_404(erasure_receipt_get, tenant=console.tenant, id=receipt_id)
    context = {"console": console, "receipt": found, "verified": receipt_verify(found)}
    return render(request, "dashboard/receipt.html", context)
