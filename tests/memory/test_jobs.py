"""Background jobs keep their state and a lease in the database: one holder at a time, and a sweep that requeues
what a dead worker left behind (the SIGKILL test with real workers is tests/foundation/test_worker_recovery.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from memory.models import (
    ExportJob,
    JobKind,
    JobLease,
    JobStatus,
    KnowledgeEntry,
    MemoryEvent,
    Page,
    ProfileVersion,
    SegmentVisit,
)
from memory.models.events import EventKind, EventStatus
from memory.services.audit import Actor
from memory.services.forgetting import profile_rederive
from memory.services.gdpr_export import _export_claim, _progress, export_build, export_request
from memory.services.jobs import job_claim, job_done, job_release, jobs_due, jobs_requeue
from memory.services.updating import pages_place, segment_visits_count
from memory.services.visits import segment_visits_queue
from tests import builders


@pytest.fixture(autouse=True)
def exports_in_a_temporary_folder(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"


def later(settings, leases: float = 2) -> datetime:
    """A moment when every lease taken now has expired."""
    return timezone.now() + timedelta(seconds=settings.JOB_LEASE_SECONDS * leases)


def evicted_page(space, django_capture_on_commit_callbacks) -> Page:
    """Eight turns, one past short-term capacity, with the placement message lost (its callback never runs)."""
    with django_capture_on_commit_callbacks(execute=False):
        builders.turns(space, messages=[f"I grow tomatoes and beans, note {n}." for n in range(8)])
    page = Page.objects.get(space=space, seq=1)
    assert page.segment_id is None
    return page


def test_a_claimed_job_is_claimed_by_nobody_else_until_its_lease_expires(space, settings):
    first = job_claim(kind=JobKind.PLACEMENT, target_id=space.id)

    assert first is not None
    assert job_claim(kind=JobKind.PLACEMENT, target_id=space.id) is None
    taken_over = job_claim(kind=JobKind.PLACEMENT, target_id=space.id, now=later(settings))
    assert taken_over is not None and taken_over.token != first.token
    assert JobLease.objects.get(kind=JobKind.PLACEMENT, target_id=space.id).attempts == 2


def test_a_task_arriving_while_another_holds_the_job_makes_the_holder_run_again(space):
    holder = job_claim(kind=JobKind.PROMOTION, target_id=41)

    assert job_claim(kind=JobKind.PROMOTION, target_id=41) is None
    assert job_done(holder) is True
    assert not JobLease.objects.exists()


def test_a_failed_run_frees_the_job_at_once_but_the_sweep_waits_for_the_back_off(space):
    lease = job_claim(kind=JobKind.PROMOTION, target_id=41)
    job_release(lease)

    row = JobLease.objects.get()
    assert row.token == "" and row.lease_until > timezone.now() + timedelta(seconds=5)
    assert jobs_requeue()[JobKind.PROMOTION] == 0
    assert job_claim(kind=JobKind.PROMOTION, target_id=41) is not None  # the task's own retry claims it


def test_placement_held_by_another_worker_is_left_to_it_and_it_runs_again(space, django_capture_on_commit_callbacks):
    page = evicted_page(space, django_capture_on_commit_callbacks)
    holder = job_claim(kind=JobKind.PLACEMENT, target_id=space.id)

    report = pages_place(page_id=page.id)

    assert report.placed_page_ids == [] and Page.objects.get(pk=page.pk).segment_id is None
    assert JobLease.objects.get(kind=JobKind.PLACEMENT, target_id=space.id).rerun
    assert job_done(holder) is True


def test_the_sweep_places_pages_whose_worker_died(space, settings, django_capture_on_commit_callbacks):
    page = evicted_page(space, django_capture_on_commit_callbacks)
    job_claim(kind=JobKind.PLACEMENT, target_id=space.id)  # a worker claimed it, then was killed

    assert jobs_requeue()[JobKind.PLACEMENT] == 0  # its lease still runs
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_requeue(now=later(settings))[JobKind.PLACEMENT] == 1

    assert Page.objects.get(pk=page.pk).segment_id is not None
    assert not JobLease.objects.filter(kind=JobKind.PLACEMENT).exists()


def test_the_sweep_promotes_a_hot_segment_whose_message_was_lost(space, settings, django_capture_on_commit_callbacks):
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=[("I love hiking with my dog Rex.", "ok")], l_interaction=builders.HOT
    )
    jobs_due(kind=JobKind.PROMOTION, target_ids=[segment.id])  # recorded by placement; its message never came

    assert jobs_requeue()[JobKind.PROMOTION] == 0  # a lease's grace for the message first
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_requeue(now=later(settings))[JobKind.PROMOTION] == 1
    with django_capture_on_commit_callbacks(execute=True):
        jobs_requeue(now=later(settings, leases=4))  # nothing left to requeue: promoted once

    assert KnowledgeEntry.objects.filter(source_segment=segment).exists()
    assert MemoryEvent.objects.filter(kind=EventKind.PROMOTION, status=EventStatus.OK).count() == 1
    assert not JobLease.objects.exists()


def test_a_promotion_of_a_segment_gone_meanwhile_is_forgotten(space, settings, django_capture_on_commit_callbacks):
    jobs_due(kind=JobKind.PROMOTION, target_ids=[987654])
    with django_capture_on_commit_callbacks(execute=True):
        jobs_requeue(now=later(settings))

    assert not JobLease.objects.exists()


def dead_export(end_user, dpo_user) -> ExportJob:
    """An export a worker claimed (running, 5%) before it was killed."""
    job = export_request(end_user=end_user, actor=Actor.operator(dpo_user))
    assert _export_claim(job.pk, timezone.now()) == 1
    return ExportJob.objects.get(pk=job.pk)


def test_a_running_export_whose_worker_died_is_retrying_and_never_usable(alice, dpo_user, settings):
    job = dead_export(alice, dpo_user)
    now = timezone.now()

    assert job.status_at(now) == JobStatus.RUNNING and job.usable_at(now)
    assert job.status_at(later(settings)) == JobStatus.RETRYING and not job.usable_at(later(settings))


def test_the_sweep_builds_again_an_export_whose_worker_died(
    alice, dpo_user, settings, django_capture_on_commit_callbacks
):
    job = dead_export(alice, dpo_user)

    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert jobs_requeue(now=later(settings))["export"] == 1
    assert ExportJob.objects.get(pk=job.pk).status == JobStatus.RETRYING
    for callback in queued:
        callback()

    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.attempts == 2
    assert [p.name for p in (settings.EXPORT_DIR / "acme").iterdir()] == [f"export-{job.pk}.zip"]


def test_a_worker_whose_export_was_taken_over_writes_nothing(alice, dpo_user, settings):
    job = dead_export(alice, dpo_user)  # attempt 1 stalls past its lease
    ExportJob.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    assert export_build(job_id=job.pk).status == JobStatus.DONE  # attempt 2
    assert not _progress(job.pk, 1, 40)
    assert export_build(job_id=job.pk) is None  # a redelivered message
    assert ExportJob.objects.get(pk=job.pk).attempts == 2


def test_an_export_that_keeps_killing_its_worker_fails_for_good(alice, dpo_user, settings):
    job = dead_export(alice, dpo_user)
    ExportJob.objects.filter(pk=job.pk).update(attempts=3)

    jobs_requeue(now=later(settings))

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "interrupted 3 times" in job.error


def test_the_sweep_forgets_a_dead_claim_on_a_space_with_nothing_left_to_place(space, settings):
    job_claim(kind=JobKind.PLACEMENT, target_id=space.id)  # its worker died; the space was erased since

    assert jobs_requeue(now=later(settings))[JobKind.PLACEMENT] == 0
    assert not JobLease.objects.exists()


def stale_profile(space, text: str = "Likes chess.") -> None:
    """A profile marked stale by a forget whose re-derivation message was lost (recorded as a job, never run)."""
    builders.knowledge(space.end_user, text="The user plays the cello")
    builders.profile(space.end_user, text=text)
    ProfileVersion.objects.filter(end_user=space.end_user).update(stale=True)
    jobs_due(kind=JobKind.REDERIVE, target_ids=[space.end_user_id])


def test_the_sweep_rederives_a_stale_profile_whose_message_was_lost(
    space, settings, django_capture_on_commit_callbacks
):
    stale_profile(space)

    assert jobs_requeue()[JobKind.REDERIVE] == 0  # a lease's grace for the message first
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_requeue(now=later(settings))[JobKind.REDERIVE] == 1

    assert not ProfileVersion.objects.filter(end_user=space.end_user, stale=True).exists()  # re-derived
    assert not JobLease.objects.exists()


def test_a_rederivation_held_by_a_live_worker_is_left_to_it(space):
    stale_profile(space)
    lease = job_claim(kind=JobKind.REDERIVE, target_id=space.end_user_id)

    assert profile_rederive(end_user_id=space.end_user_id) is None

    assert ProfileVersion.objects.get(end_user=space.end_user).stale
    assert JobLease.objects.get(kind=JobKind.REDERIVE).rerun and lease is not None


def test_a_stale_profile_with_no_job_at_all_is_rederived_by_the_sweep(space, django_capture_on_commit_callbacks):
    stale_profile(space)
    JobLease.objects.all().delete()  # marked before re-derivations were recorded as jobs

    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_requeue()[JobKind.REDERIVE] == 1

    assert not ProfileVersion.objects.filter(end_user=space.end_user, stale=True).exists()


def test_the_sweep_counts_visits_whose_wake_up_was_lost(space, settings, django_capture_on_commit_callbacks):
    segment = builders.segment(space, summary="s", keywords=["s"])
    with django_capture_on_commit_callbacks(execute=False):
        segment_visits_queue(segment_ids=[segment.id], now=timezone.now())

    assert jobs_requeue()["visits"] == 0  # a lease's grace for the message first
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_requeue(now=later(settings))["visits"] == 1

    segment.refresh_from_db()
    assert segment.n_visit == 1 and not SegmentVisit.objects.exists()


def test_a_segment_that_visits_make_hot_is_queued_for_promotion(space, django_capture_on_commit_callbacks):
    long_ago = timezone.now() - timedelta(days=365)  # no recency left: heat = N_visit + L_interaction
    segment = builders.segment_with_pages(
        space, summary="hiking", messages=["I hike with my dog Rex."], l_interaction=2, last_touched_at=long_ago
    )
    for _ in range(4):
        segment_visits_queue(segment_ids=[segment.id], now=long_ago)

    with django_capture_on_commit_callbacks(execute=False):
        assert segment_visits_count(now=long_ago) == 4

    assert JobLease.objects.filter(kind=JobKind.PROMOTION, target_id=segment.id).exists()
