"""The ways a retention run starts: beat's daily task (one per tenant with a policy, batches until done, a finished
day skipped) and the `retention_run` command (with --dry-run and --tenant)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from memory.models import Page, RetentionRun
from memory.services.audit import Actor
from memory.services.retention import retention_policy_set
from memory.tasks import retention_daily_task, retention_run_task
from tests import builders

DPO = Actor("operator", "9", "dana")


@pytest.fixture
def old_pages(tenant, alice):
    """Three pages of Alice's from two years ago, and Acme's policy of 180 days for pages."""
    space = builders.space_of(alice)
    long_ago = timezone.now() - timedelta(days=730)
    builders.segment_with_pages(space, summary="beans", messages=["I grow beans.", "Beans", "Sun"], at=long_ago)
    retention_policy_set(tenant=tenant, limits={"pages": 180}, actor=DPO)
    return space


def test_beat_is_scheduled_daily():
    schedule = settings.CELERY_BEAT_SCHEDULE["retention-daily"]
    assert schedule["task"] == "memory.tasks.retention_daily_task"
    assert schedule["schedule"].hour == {settings.RETENTION_HOUR}


def test_the_daily_task_runs_every_tenant_with_a_policy_in_batches_until_done(old_pages, other_tenant, settings):
    settings.RETENTION_BATCH_SIZE = 2
    assert retention_daily_task.delay().get() == 1  # Globex has no policy
    runs = list(RetentionRun.objects.order_by("id"))
    assert [run.removed["pages"] for run in runs] == [2, 1] and [run.more for run in runs] == [True, False]
    assert {run.trigger for run in runs} == {"beat"} and not Page.objects.filter(space=old_pages).exists()


def test_a_redelivered_daily_task_does_a_finished_day_once(old_pages, tenant):
    day = timezone.now().date().isoformat()
    retention_run_task.delay(tenant.pk, day)
    retention_run_task.delay(tenant.pk, day)
    assert RetentionRun.objects.count() == 1


def test_the_command_shows_a_dry_run_and_changes_nothing(old_pages):
    out = StringIO()
    call_command("retention_run", "--dry-run", stdout=out)
    assert "acme: the next run would remove:" in out.getvalue() and "short- and mid-term pages: 3" in out.getvalue()
    assert Page.objects.filter(space=old_pages).count() == 3 and not RetentionRun.objects.exists()


def test_the_command_runs_a_tenants_batches_until_nothing_is_due(old_pages, settings):
    settings.RETENTION_BATCH_SIZE = 2
    out = StringIO()
    call_command("retention_run", "--tenant", "acme", stdout=out)
    assert out.getvalue().count("acme: run") == 2 and "short- and mid-term pages 1" in out.getvalue()
    assert not Page.objects.filter(space=old_pages).exists()


def test_the_command_names_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="no tenant with slug 'nope'"):
        call_command("retention_run", "--tenant", "nope")
