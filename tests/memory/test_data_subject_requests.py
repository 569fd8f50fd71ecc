"""Data-subject requests as cases: deadlines in calendar months, every step audited, fulfilment linking its proof."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import AuditEntry, DataSubjectRequest, EndUser, ErasureReceipt, ExportJob, RequestStatus
from memory.selectors.data_subject_requests import data_subject_request_timeline, erasure_receipts_of
from memory.services.audit import Actor
from memory.services.data_subject_requests import (
    DataSubjectRequestError,
    data_subject_request_extend,
    data_subject_request_fulfil,
    data_subject_request_open,
    data_subject_request_refuse,
    data_subject_request_withdraw,
    months_after,
    request_due,
    request_extended_due,
)
from memory.services.legal_hold import LegalHoldActive, legal_hold_place
from tests import builders

DPO = Actor.system("dpo-desk")


@pytest.fixture(autouse=True)
def export_dir(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"


def _open(tenant, kind="erasure", external_id="alice", **extra):
    fields = {"channel": "email", "requester": "Alice A., alice@example.org", "received_at": timezone.now()}
    return data_subject_request_open(
        tenant=tenant, kind=kind, external_id=external_id, actor=DPO, identity_check="Replied from known address",
        **(fields | extra),
    )  # fmt: skip


@pytest.mark.parametrize(
    "received, due",
    [
        (datetime(2025, 3, 14, 9, 30, tzinfo=UTC), datetime(2025, 4, 14, 9, 30, tzinfo=UTC)),
        (datetime(2025, 1, 31, tzinfo=UTC), datetime(2025, 2, 28, tzinfo=UTC)),
        (datetime(2024, 1, 31, tzinfo=UTC), datetime(2024, 2, 29, tzinfo=UTC)),
        (datetime(2025, 12, 15, tzinfo=UTC), datetime(2026, 1, 15, tzinfo=UTC)),
        (datetime(2025, 8, 31, tzinfo=UTC), datetime(2025, 9, 30, tzinfo=UTC)),
    ],
)
def test_a_request_is_due_one_calendar_month_after_it_arrived(received, due):
    assert request_due(received) == due


def test_an_extension_runs_to_three_calendar_months_after_arrival():
    assert request_extended_due(datetime(2025, 11, 30, tzinfo=UTC)) == datetime(2026, 2, 28, tzinfo=UTC)
    assert months_after(datetime(2025, 1, 31, tzinfo=UTC), 12) == datetime(2026, 1, 31, tzinfo=UTC)


def test_opening_a_request_matches_the_user_sets_its_deadline_and_is_audited(tenant, alice):
    request = _open(tenant, received_at=datetime(2025, 1, 31, 10, tzinfo=UTC))

    assert request.end_user == alice and request.status == RequestStatus.OPEN
    assert request.due_at == datetime(2025, 2, 28, 10, tzinfo=UTC)
    assert [e.action for e in data_subject_request_timeline(request)] == ["dsr.open"]


def test_a_request_for_an_unknown_external_id_is_kept_as_typed(tenant):
    request = _open(tenant, external_id="carol-42")

    assert request.end_user is None and request.external_id == "carol-42"
    with pytest.raises(DataSubjectRequestError, match="no end user"):
        data_subject_request_fulfil(request=request, actor=DPO)


def test_a_request_cannot_arrive_in_the_future(tenant, alice):
    with pytest.raises(DataSubjectRequestError, match="future"):
        _open(tenant, received_at=timezone.now() + timedelta(days=1))


def test_extending_needs_a_reason_happens_once_and_is_audited(tenant, alice):
    request = _open(tenant, received_at=datetime(2025, 1, 10, tzinfo=UTC), now=datetime(2025, 1, 11, tzinfo=UTC))
    with pytest.raises(DataSubjectRequestError, match="reason"):
        data_subject_request_extend(request=request, actor=DPO, reason=" ")

    request = data_subject_request_extend(request=request, actor=DPO, reason="Many requests at once")

    assert request.deadline == datetime(2025, 4, 10, tzinfo=UTC)
    with pytest.raises(DataSubjectRequestError, match="already extended"):
        data_subject_request_extend(request=request, actor=DPO, reason="again")
    assert [e.action for e in data_subject_request_timeline(request)] == ["dsr.open", "dsr.extend"]


def test_refusing_and_withdrawing_close_the_request_once(tenant, alice, bob):
    refused = data_subject_request_refuse(request=_open(tenant), actor=DPO, reason="Manifestly unfounded")
    withdrawn = data_subject_request_withdraw(request=_open(tenant, external_id="bob"), actor=DPO)

    assert refused.status == RequestStatus.REFUSED and refused.answered_at and refused.outcome
    assert withdrawn.status == RequestStatus.WITHDRAWN
    with pytest.raises(DataSubjectRequestError, match="already refused"):
        data_subject_request_fulfil(request=refused, actor=DPO)
    assert AuditEntry.objects.filter(action__in=["dsr.refuse", "dsr.withdraw"]).count() == 2


def test_fulfilling_an_erasure_attaches_the_receipt_and_the_request_survives(tenant, alice):
    request = _open(tenant)

    request = data_subject_request_fulfil(request=request, actor=DPO, note="Identity confirmed")

    assert not EndUser.objects.filter(pk=alice.pk).exists()
    request = DataSubjectRequest.objects.get(pk=request.pk)
    assert request.status == RequestStatus.FULFILLED and request.answered_at is not None
    assert request.erasure_receipt == ErasureReceipt.objects.get() and request.end_user is None
    assert request.external_id == "alice"
    assert list(erasure_receipts_of(tenant=tenant, external_id="alice")) == [request.erasure_receipt]
    actions = [e.action for e in data_subject_request_timeline(request)]
    assert actions == ["dsr.open", "gdpr.erasure", "dsr.fulfil"]


def test_an_erasure_under_legal_hold_is_refused_and_the_request_stays_open_with_the_reason(tenant, alice):
    legal_hold_place(end_user=alice, actor=DPO, reason="Litigation")
    request = _open(tenant)

    with pytest.raises(LegalHoldActive):
        data_subject_request_fulfil(request=request, actor=DPO)

    request.refresh_from_db()
    assert request.status == RequestStatus.OPEN and EndUser.objects.filter(pk=alice.pk).exists()
    held = AuditEntry.objects.get(action="dsr.held")
    assert "legal hold" in held.reason and held.target_id == request.pk


def test_fulfilling_an_access_request_queues_an_export_and_links_it(tenant, alice, django_capture_on_commit_callbacks):
    request = data_subject_request_fulfil(request=_open(tenant, kind="access"), actor=DPO)

    assert request.export_job_id == ExportJob.objects.get(end_user=alice).pk
    assert "gdpr.export" in [e.action for e in data_subject_request_timeline(request)]


def test_a_restriction_pauses_memory_and_links_the_pauses(tenant, alice, assistant):
    space = builders.space_of(alice, assistant)

    request = data_subject_request_fulfil(request=_open(tenant, kind="restriction"), actor=DPO)

    space.refresh_from_db()
    assert space.paused
    assert AuditEntry.objects.get(pk=request.fulfilled_by_entries[0]).action == "memory.pause"


def test_a_rectification_needs_an_edit_or_a_note(tenant, alice):
    request = _open(tenant, kind="rectification")
    with pytest.raises(DataSubjectRequestError, match="say what was corrected"):
        data_subject_request_fulfil(request=request, actor=DPO)

    request = data_subject_request_fulfil(request=request, actor=DPO, note="Corrected the address in the profile")

    assert request.status == RequestStatus.FULFILLED and request.outcome.startswith("Corrected")


def test_the_database_refuses_a_fulfilled_request_without_an_answer_time(tenant, alice):
    request = _open(tenant, kind="rectification")
    with pytest.raises(IntegrityError), transaction.atomic():
        DataSubjectRequest.objects.filter(pk=request.pk).update(status=RequestStatus.FULFILLED)
    with pytest.raises(IntegrityError), transaction.atomic():
        DataSubjectRequest.objects.filter(pk=request.pk).update(due_at=request.received_at)
