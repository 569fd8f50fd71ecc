"""Governance (scope `govern`): the audit log, GDPR exports, erasure and its receipts."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.response import Response

from api import serializers
from api.exceptions import Conflict, Gone, PayloadTooLarge
from api.serializers import ExternalIdField
from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.bundles import BundleInvalid
from memory.importers import BUNDLE, bundle_from
from memory.models import ActorKind, ExportJob, ImportStatus, JobStatus
from memory.selectors.governance import (
    audit_entry_list,
    erasure_receipt_get,
    erasure_receipt_list,
    export_job_get,
    export_job_list,
    memory_import_get,
)
from memory.selectors.people import end_user_get
from memory.services.bundle_import import ImportRefused, ImportResult, memory_import
from memory.services.gdpr import user_erase
from memory.services.gdpr_export import ExportUnavailable, export_file, export_request
from memory.services.import_jobs import import_in_background, memory_import_queue

DEFAULT_LEGAL_BASIS = "GDPR Art. 17 (right to erasure)"
MAX_ID = 2**63 - 1


class AuditFilter(drf.Serializer):
    user = ExternalIdField(
        required=False, source="user_external_id", help_text="Entries about this end user (by external id)."
    )
    subject_id = drf.IntegerField(min_value=1, max_value=MAX_ID, required=False, help_text="…or by internal id.")
    action = drf.CharField(max_length=40, required=False, help_text="e.g. page.forget, gdpr.erasure, memory.read")
    actor_kind = drf.ChoiceField(choices=ActorKind.choices, required=False)
    target_type = drf.CharField(max_length=20, required=False, help_text="e.g. page, segment, knowledge")
    target_id = drf.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    since = drf.DateTimeField(required=False, help_text="Entries at or after this time (ISO-8601).")
    until = drf.DateTimeField(required=False, help_text="Entries before this time (ISO-8601).")


class AuditView(ApiListView):
    """The tenant's audit log, newest first: who did or read what to whose memory, when and why."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.AuditEntryOut
    filters_class = AuditFilter

    def list_for(self, tenant, filters):
        return audit_entry_list(tenant=tenant, **filters)


# --- Erasure ----------------------------------------------------------------------------------------------------


class ErasureView(ApiView):
    """Erase everything about an end user. `dry_run` (the default) only counts; a real run answers a receipt."""

    required_scopes = {"POST": "govern"}
    serializer_class = serializers.ErasureIn

    @extend_schema(operation_id="users_erasure", request=serializers.ErasureIn, responses={200: serializers.ErasureOut})
    def post(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        data = self.valid(serializers.ErasureIn)
        erasure = user_erase(
            end_user=end_user,
            actor=self.actor,
            legal_basis=data["legal_basis"].strip() or DEFAULT_LEGAL_BASIS,
            reason=data.get("reason", ""),
            dry_run=data["dry_run"],
        )
        receipt = serializers.ErasureReceiptOut(erasure.receipt).data if erasure.receipt else None
        return Response({"dry_run": data["dry_run"], "counts": erasure.counts, "receipt": receipt})


class ErasureReceiptsView(ApiListView):
    """The tenant's erasure receipts, newest first; they stay after the erased users are gone."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.ErasureReceiptOut

    def list_for(self, tenant, filters):
        return erasure_receipt_list(tenant=tenant)


class ErasureReceiptView(ApiView):
    """One erasure receipt, with whether its hash still matches its fields (`verified`)."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.ErasureReceiptOut

    @extend_schema(operation_id="erasure_receipts_read")
    def get(self, request, pk: int):
        return Response(
            serializers.ErasureReceiptOut(get_or_not_found(erasure_receipt_get, tenant=self.tenant, id=pk)).data
        )


# --- Exports ----------------------------------------------------------------------------------------------------


def _job_response(job: ExportJob, request, code: int | None = None) -> Response:
    if code is None:
        code = status.HTTP_200_OK if job.status == JobStatus.DONE else status.HTTP_202_ACCEPTED
    return Response(serializers.ExportJobOut(job, context={"request": request}).data, status=code)


class UserExportView(ApiView):
    """GET: the user's latest export as it stands (404 when there is none); it never starts one. POST: a new one.

    A job is ready only when its `status` is `done` and it has a `download_url`; poll `GET /exports/{id}/` until
    then. Starting an export is a POST, so a cross-site GET through an operator's browser cannot start one.
    """

    required_scopes = {"GET": "govern", "POST": "govern"}
    serializer_class = serializers.ExportJobOut

    @extend_schema(operation_id="users_export_read", responses={200: serializers.ExportJobOut})
    def get(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        job = export_job_list(tenant=self.tenant, end_user=end_user).first()
        if job is None:
            raise NotFound(f"No export of {external_id!r} has been requested; POST to start one.")
        return _job_response(job, request, status.HTTP_200_OK)

    @extend_schema(operation_id="users_export_create", request=None, responses={202: serializers.ExportJobOut})
    def post(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        job = export_request(end_user=end_user, actor=self.actor, request_id=self.request_id)
        return _job_response(job, request, status.HTTP_202_ACCEPTED)


class ExportView(ApiView):
    required_scopes = {"GET": "govern"}
    serializer_class = serializers.ExportJobOut

    @extend_schema(operation_id="exports_read", responses={200: serializers.ExportJobOut})
    def get(self, request, pk: int):
        return _job_response(get_or_not_found(export_job_get, tenant=self.tenant, id=pk), request, status.HTTP_200_OK)


class ExportDownloadView(ApiView):
    """The export bundle (a zip of export.json and export.html): 409 until it is ready, 410 once it expired."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.ExportJobOut

    @extend_schema(
        operation_id="exports_download",
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="The bundle."),
            410: OpenApiResponse(description="The link expired and the file was deleted."),
        },
    )
    def get(self, request, pk: int):
        job = get_or_not_found(export_job_get, tenant=self.tenant, id=pk)
        if job.status == JobStatus.EXPIRED:
            raise Gone("This export has expired and its file was deleted.")
        if job.status != JobStatus.DONE:
            raise Conflict(f"This export is {job.get_status_display().lower()}, not ready.", code="not_ready")
        try:
            # The Bearer token already authorises the caller; the job's own token is for the dashboard's links.
            path = export_file(job=job, token=job.download_token)
        except ExportUnavailable as exc:
            raise (Gone(str(exc)) if exc.gone else Conflict(str(exc), code="not_ready")) from None
        response = FileResponse(path.open("rb"), as_attachment=True, filename=f"memoryos-export-{job.pk}.zip")
        response["Content-Type"] = "application/zip"
        return response


# --- Import of a memory bundle ----------------------------------------------------------------------------------


class UserImportView(ApiView):
    """Import a memory bundle (a GDPR export's export.json) into the user: `dry_run` says what would be created.

    Pages keep their times, pins, locks, profile history and facts' source pages are kept, and every vector is
    computed again. A bundle that fails validation is refused whole (400) with its first problem's JSON path; memory
    that is paused or already holds pages is refused (409); a bundle already imported for the user changes nothing
    (200, `already_imported`). Bodies past MEMORY_IMPORT_MAX_BYTES are refused (413) before they are read. A bundle
    of more than MEMORY_IMPORT_SYNC_PAGES pages is checked at once, then imported in the background: 202 with its
    `import_id`; GET /imports/{id}/ says its status and progress.
    """

    required_scopes = {"POST": "govern"}
    serializer_class = serializers.ImportIn

    @extend_schema(
        operation_id="users_import",
        request=serializers.ImportIn,
        responses={200: serializers.ImportOut, 201: serializers.ImportOut, 202: serializers.ImportOut},
    )
    def post(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        length = request.META.get("CONTENT_LENGTH") or "0"
        if not (length.isascii() and length.isdigit()):
            raise ParseError("Content-Length must be the body's size in bytes.")
        if int(length) > settings.MEMORY_IMPORT_MAX_BYTES:
            raise PayloadTooLarge(f"The bundle is larger than {settings.MEMORY_IMPORT_MAX_BYTES} bytes.")
        data = self.valid(serializers.ImportIn)
        try:
            data["bundle"] = bundle_from(data["format"], data["bundle"], external_id=external_id)
            background = not data["dry_run"] and import_in_background(data["bundle"])
            result = self._import(end_user, data, background=background)
        except BundleInvalid as exc:
            what = "bundle" if data["format"] == BUNDLE else f"{data['format']} export"
            problem = {"non_field_errors": [f"The {what} is refused: {exc}"], "bundle": [str(exc)]}
            raise drf.ValidationError(problem) from None
        except ImportRefused as exc:
            raise Conflict(f"Not imported: {exc}.", code="import_refused") from None
        if background and not result.already_imported:
            return Response(_import_body(result), status=202)
        created = not (result.dry_run or result.already_imported)
        return Response(_import_body(result), status=201 if created else 200)

    def _import(self, end_user, data: dict, *, background: bool) -> ImportResult:
        """Import now (or only say what it would create), or, for a large bundle, check it now and queue it."""
        who = {"actor": self.actor, "assistant_external_id": data["assistant"], "request_id": self.request_id}
        if background:
            return memory_import_queue(end_user=end_user, bundle=data["bundle"], **who)
        return memory_import(end_user=end_user, bundle=data["bundle"], dry_run=data["dry_run"], **who)


class ImportView(ApiView):
    """A memory import: a large bundle's import in the background (`progress` in percent) until it is done."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.ImportJobOut

    @extend_schema(operation_id="imports_read")
    def get(self, request, pk: int):
        job = get_or_not_found(memory_import_get, tenant=self.tenant, id=pk)
        return Response(serializers.ImportJobOut(job).data)


def _import_body(result: ImportResult) -> dict:
    body = {
        "dry_run": result.dry_run,
        "already_imported": result.already_imported,
        "fingerprint": result.fingerprint,
        "counts": result.counts,
        "assistants": result.assistants,
        "skipped": result.skipped,
        "import_id": result.memory_import.pk if result.memory_import else None,
        "status": result.memory_import.status if result.memory_import else ImportStatus.DONE,
    }
    return serializers.ImportOut(body).data
