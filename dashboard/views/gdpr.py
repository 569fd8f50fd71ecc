"""GDPR requests, for dpo and admin (govern): exports built in the background with progress, downloads until the
link expires (then 410), erasure with a dry run first and a receipt that stays."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.console import actor_of, console_or_404, get_or_404, page_or_partial, record_read, request_id_of
from dashboard.forms import LEGAL_BASES, BundleImportForm, ErasureForm
from memory.bundles import BundleInvalid, timestamp
from memory.models import ImportStatus
from memory.roles import Permission
from memory.selectors.data_subject_requests import end_user_search, erasure_receipts_of
from memory.selectors.governance import (
    erasure_receipt_get,
    erasure_receipt_list,
    export_job_get,
    export_job_list,
    memory_import_get,
    memory_import_list,
)
from memory.selectors.people import assistant_list, end_user_get
from memory.selectors.retention import legal_hold_active
from memory.services.bundle_import import ImportRefused, bundle_stage, memory_import, memory_import_staged
from memory.services.gdpr import receipt_verify, user_erase
from memory.services.gdpr_export import ExportUnavailable, export_file, export_request
from memory.services.import_jobs import import_in_background, memory_import_staged_queue
from memory.services.legal_hold import LegalHoldActive
from memory.services.turns import EndUserClosed

EXPORTS_SHOWN = 50
PREVIEW_ROWS = 5  # pages and facts a bundle's dry run shows
RECEIPTS_SHOWN = 100
USERS_SHOWN = 20


@require_GET
@login_required
def gdpr_home(request: HttpRequest, slug: str) -> HttpResponse:
    """Exports, receipts, and a lookup: users by external id or name, receipts by an erased user's external id.
    HTMX refreshes only the lookup's results."""
    console = console_or_404(request, slug, Permission.GOVERN)
    search = request.GET.get("q", "").strip()[:200]
    context = {"console": console, "q": search} | _lookup(console.tenant, search)
    if not request.htmx:
        context["jobs"] = export_job_list(tenant=console.tenant)[:EXPORTS_SHOWN]
        context["receipts"] = erasure_receipt_list(tenant=console.tenant)[:RECEIPTS_SHOWN]
    return render(request, page_or_partial(request, "dashboard/gdpr.html", "lookup"), context)


def _lookup(tenant, search: str) -> dict:
    if not search:
        return {}
    return {
        "found_users": end_user_search(tenant=tenant, search=search)[:USERS_SHOWN],
        "found_receipts": erasure_receipts_of(tenant=tenant, external_id=search),
    }


@require_GET
@login_required
def user_gdpr(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    jobs = export_job_list(tenant=console.tenant, end_user=end_user)[:EXPORTS_SHOWN]
    imports = memory_import_list(tenant=console.tenant, end_user=end_user).exclude(status=ImportStatus.STAGED)
    context = {"console": console, "end_user": end_user, "jobs": jobs, "imports": imports[:EXPORTS_SHOWN]}
    return render(request, "dashboard/user_gdpr.html", context)


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


# --- Import of a memory bundle ----------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@login_required
def import_bundle(request: HttpRequest, slug: str, end_user_id: int) -> HttpResponse:
    """GET: the upload form. POST: validate the bundle and show the dry run (what will be created) with a confirm
    button; the bundle is staged until it is confirmed. A refused bundle shows its first problem on the form."""
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    assistants = list(assistant_list(tenant=console.tenant, active=True).values_list("external_id", flat=True))
    form = BundleImportForm(request.POST or None, request.FILES or None, assistants=assistants)
    context = {"console": console, "end_user": end_user, "form": form}
    if form.is_bound and form.is_valid():
        context |= _dry_run(form, end_user, actor_of(request))
    return render(request, "dashboard/import.html", context)


def _dry_run(form: BundleImportForm, end_user, actor) -> dict:
    """The plan of a valid bundle, staged for the confirm step; or nothing, with the refusal added to the form."""
    bundle, assistant = form.cleaned_data["bundle"], form.cleaned_data["assistant"]
    try:
        plan = memory_import(
            end_user=end_user, bundle=bundle, actor=actor, assistant_external_id=assistant, dry_run=True
        )
    except (BundleInvalid, ImportRefused, EndUserClosed) as exc:
        form.add_error("bundle" if isinstance(exc, BundleInvalid) else None, _refusal(exc))
        return {}
    if plan.already_imported:
        form.add_error(None, f"This bundle was already imported for {end_user}; there is nothing to do.")
        return {}
    staged = bundle_stage(end_user=end_user, bundle=bundle, actor=actor, assistant_external_id=assistant)
    return {"plan": plan, "staged": staged, "preview": _preview(bundle)}


def _refusal(exc: Exception) -> str:
    return f"The bundle is refused: {exc}" if isinstance(exc, BundleInvalid) else f"Not imported: {exc}."


def _preview(bundle: dict) -> dict:
    """A few of the pages and facts the import will create, to recognise the bundle by."""
    pages = [page for space in bundle["memory"] for page in space["pages"]][:PREVIEW_ROWS]
    shown = [page | {"at": timestamp(page["at"])} for page in pages]  # validated: every time parses
    return {"pages": shown, "knowledge": bundle["knowledge"][:PREVIEW_ROWS]}


@require_POST
@login_required
def import_confirm(request: HttpRequest, slug: str, end_user_id: int, import_id: int) -> HttpResponse:
    """Import the bundle a dry run staged; back to the user's GDPR page with what was created."""
    console = console_or_404(request, slug, Permission.GOVERN)
    end_user = get_or_404(end_user_get, tenant=console.tenant, id=end_user_id)
    staged = get_or_404(
        memory_import_get, tenant=console.tenant, end_user=end_user, id=import_id, status=ImportStatus.STAGED
    )
    if import_in_background(staged.bundle):
        return _import_queue(request, slug, staged)
    try:
        result = memory_import_staged(staged=staged, actor=actor_of(request), request_id=request_id_of(request))
    except (BundleInvalid, ImportRefused, EndUserClosed) as exc:
        messages.error(request, _refusal(exc))
        return redirect("console:import_bundle", slug, end_user.pk)
    if result.already_imported:
        messages.info(request, "This bundle was already imported for this user; nothing changed.")
    else:
        messages.success(request, f"Imported {result.counts['pages']} pages and {result.counts['knowledge']} facts.")
    return redirect("console:user_gdpr", slug, end_user.pk)


def _import_queue(request: HttpRequest, slug: str, staged) -> HttpResponse:
    """A large staged bundle goes to the worker; the user's GDPR page shows its progress."""
    end_user, pages = staged.end_user, sum(len(space["pages"]) for space in staged.bundle["memory"])
    try:
        queued = memory_import_staged_queue(staged=staged, actor=actor_of(request), request_id=request_id_of(request))
    except (BundleInvalid, ImportRefused, EndUserClosed) as exc:
        messages.error(request, _refusal(exc))
        return redirect("console:import_bundle", slug, end_user.pk)
    if queued is None:
        messages.info(request, "This bundle was already imported for this user; nothing changed.")
    else:
        messages.success(request, f"Importing {pages} pages in the background; its progress shows below.")
    return redirect("console:user_gdpr", slug, end_user.pk)
