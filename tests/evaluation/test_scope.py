"""A run's changes to settings, Celery and logging last only for the run: everything is put back, even on error."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from celery.signals import task_postrun, task_prerun
from django.conf import settings as django_settings
from django.core.management import call_command

from evaluation.scope import celery_eager, celery_task_signals, settings_changed
from memoryos_site.celery import app as celery_app
from tests.evaluation.test_locomo_eval import TINY


class Boom(Exception):
    pass


def test_changed_settings_are_restored_and_new_ones_removed_even_on_error(settings):
    settings.MEMORY_RETRIEVE_PAGES = 7

    with pytest.raises(Boom), settings_changed(MEMORY_RETRIEVE_PAGES=20, EVAL_ONLY_SETTING="x"):
        assert django_settings.MEMORY_RETRIEVE_PAGES == 20 and django_settings.EVAL_ONLY_SETTING == "x"
        raise Boom

    assert django_settings.MEMORY_RETRIEVE_PAGES == 7
    assert not hasattr(django_settings, "EVAL_ONLY_SETTING")


def test_celery_runs_eager_and_quiet_only_inside_the_block():
    celery_app.conf.task_always_eager = False
    trace = logging.getLogger("celery.app.trace")
    level = trace.level

    with pytest.raises(Boom), celery_eager():
        assert celery_app.conf.task_always_eager is True and trace.level == logging.WARNING
        raise Boom

    assert celery_app.conf.task_always_eager is False and trace.level == level


def test_task_signal_receivers_are_disconnected_after_the_block():
    def started(**_) -> None: ...

    def finished(**_) -> None: ...

    before = len(task_prerun.receivers), len(task_postrun.receivers)

    with pytest.raises(Boom), celery_task_signals(prerun=started, postrun=finished):
        assert (len(task_prerun.receivers), len(task_postrun.receivers)) == (before[0] + 1, before[1] + 1)
        raise Boom

    assert (len(task_prerun.receivers), len(task_postrun.receivers)) == before


@pytest.mark.django_db(transaction=True)
def test_locomo_eval_leaves_settings_and_celery_as_they_were(tmp_path: Path, settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"
    settings.MEMORY_RETRIEVE_PAGES = 4
    celery_app.conf.task_always_eager = False  # the run itself turns eager mode on, then off again
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY))

    call_command(
        "locomo_eval",
        *("--data", str(data), "--systems", "flat_rag", "--tenant", "locomo-scope", "--no-progress"),
        *("--out", str(tmp_path / "results.json"), "--report", str(tmp_path / "report.html")),
    )

    assert django_settings.LLM_BASE_URL == "http://llm.invalid/v1"
    assert django_settings.MEMORY_RETRIEVE_PAGES == 4
    assert celery_app.conf.task_always_eager is False
