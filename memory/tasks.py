"""Celery tasks: thin, idempotent, taking ids; each calls one service."""

from __future__ import annotations

import datetime
import logging

from celery import shared_task
from django.utils import timezone

from memory.embeddings import EmbeddingUnavailable
from memory.models import Tenant
from memory.selectors.retention import retention_tenants
from memory.services.data_subject_requests import data_subject_requests_due_soon_emit
from memory.services.forgetting import profile_rederive
from memory.services.gdpr_export import export_build, exports_expire
from memory.services.import_jobs import memory_import_run
from memory.services.jobs import RETRY_DELAYS, jobs_requeue
from memory.services.personal_data import personal_data_rescan
from memory.services.promotion import segment_promote
from memory.services.retention import retention_run, retention_run_daily
from memory.services.updating import pages_place, segment_visits_count
from memory.services.webhook_delivery import webhook_deliver, webhook_deliveries_requeue, webhook_log_expire
from memory.steps.types import StepFailed

log = logging.getLogger(__name__)


def _retry_later(task, exc: Exception):
    if isinstance(exc, StepFailed) and not exc.retryable:
        log.warning("memory step failed for good: %s", exc)
        return None
    attempt = task.request.retries
    if attempt >= len(RETRY_DELAYS):
        log.error("memory step still failing after %s retries; the sweep will requeue it: %s", attempt, exc)
        return None
    raise task.retry(exc=exc, countdown=RETRY_DELAYS[attempt])


@shared_task(bind=True, acks_late=True, max_retries=len(RETRY_DELAYS))
def pages_place_task(self, page_id: int) -> None:
    """Place the evicted page (and any earlier pending pages of its space) into mid-term memory."""
    try:
        pages_place(page_id=page_id)
    except (StepFailed, EmbeddingUnavailable) as exc:
        _retry_later(self, exc)


@shared_task(bind=True, acks_late=True, max_retries=len(RETRY_DELAYS))
def segment_promote_task(self, segment_id: int) -> None:
    """Promote a hot segment into long-term personal memory."""
    try:
        segment_promote(segment_id=segment_id)
    except (StepFailed, EmbeddingUnavailable) as exc:
        _retry_later(self, exc)


@shared_task(acks_late=True)
def jobs_requeue_task() -> dict[str, int]:
    """Queue again placements, promotions and exports whose worker died or whose message was lost (beat, 1 min)."""
    return jobs_requeue()


@shared_task(acks_late=True)
def segment_visits_count_task() -> int:
    """Count the segment visits retrieval queued (N_visit, last touch, heat samples) and promote segments they made
    hot; a second run finds none."""
    return segment_visits_count()


@shared_task(acks_late=True)
def export_build_task(job_id: int) -> None:
    """Build one GDPR export bundle (a job already done, failed or expired is skipped)."""
    export_build(job_id=job_id)


@shared_task(acks_late=True)
def memory_import_run_task(import_id: int) -> None:
    """Import one queued memory bundle (an import already done, failed or running elsewhere is skipped)."""
    memory_import_run(import_id=import_id)


@shared_task(acks_late=True)
def exports_expire_task() -> int:
    """Delete export bundles whose download link has expired."""
    return exports_expire()


@shared_task(bind=True, acks_late=True, max_retries=len(RETRY_DELAYS))
def profile_rederive_task(self, end_user_id: int) -> None:
    """Re-derive a profile marked stale by a forget or a correction (a profile no longer stale is skipped)."""
    try:
        profile_rederive(end_user_id=end_user_id)
    except StepFailed as exc:
        _retry_later(self, exc)


@shared_task(acks_late=True)
def retention_daily_task() -> int:
    """Queue today's retention run of every tenant with a policy (beat, daily)."""
    day = timezone.now().date().isoformat()  # the UTC day, as beat's schedule
    tenant_ids = retention_tenants()
    for tenant_id in tenant_ids:
        retention_run_task.delay(tenant_id, day)
    return len(tenant_ids)


@shared_task(acks_late=True)
def retention_run_task(tenant_id: int, day: str | None = None) -> int | None:
    """One bounded batch of a tenant's retention; with `day` (beat) a day already done is skipped, and the next
    batch is queued while there is more to remove. Without `day` (the console's "run now") one batch runs."""
    if day is None:
        tenant = Tenant.objects.filter(pk=tenant_id).first()
        run = retention_run(tenant=tenant, trigger="console") if tenant else None
        return run.pk if run else None
    run = retention_run_daily(tenant_id=tenant_id, day=datetime.date.fromisoformat(day))
    if run is not None and run.more and sum(run.removed.values()):
        retention_run_task.delay(tenant_id, day)
    return run.pk if run else None


@shared_task(acks_late=True)
def personal_data_rescan_task(scan_id: int) -> None:
    """Re-scan a tenant's stored memory under its personal-data policy (a scan already claimed is skipped)."""
    personal_data_rescan(scan_id=scan_id)


@shared_task(acks_late=True)
def webhook_deliver_task(delivery_id: int) -> None:
    """Send one webhook delivery that is due (one delivered, failed, cancelled, not due or being sent is skipped)."""
    webhook_deliver(delivery_id=delivery_id)


@shared_task(acks_late=True)
def webhook_deliveries_requeue_task() -> int:
    """Queue the webhook deliveries whose next attempt is due (beat, every 30 s)."""
    return webhook_deliveries_requeue()


@shared_task(acks_late=True)
def webhook_log_expire_task() -> int:
    """Delete webhook events past WEBHOOK_LOG_DAYS whose deliveries are settled (beat, daily)."""
    return webhook_log_expire()


@shared_task(acks_late=True)
def data_subject_requests_due_soon_emit_task() -> int:
    """Announce unanswered data-subject requests near their deadline, once per deadline (beat, hourly)."""
    return data_subject_requests_due_soon_emit()
