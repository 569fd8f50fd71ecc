"""Every change a run makes to process-wide state, scoped: each context manager puts the previous values back.

An evaluation or a benchmark may run inside a process that goes on afterwards (a shell, a test session), so it
changes Django settings, Celery's configuration, Celery's signals and logging only through here, and the block's
exit (normal or by an exception) leaves them as they were.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from celery.signals import task_postrun, task_prerun
from django.conf import settings

from memoryos_site.celery import app as celery_app

_UNSET = object()


@contextlib.contextmanager
def settings_changed(**values: object) -> Iterator[None]:
    """Set Django settings for the block; afterwards restore each previous value, or remove a setting that was unset.

    A plain setattr rather than django.test's override_settings: this is a run's configuration, not a test's.
    """
    previous = {name: getattr(settings, name, _UNSET) for name in values}
    for name, value in values.items():
        setattr(settings, name, value)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is _UNSET:
                delattr(settings, name)
            else:
                setattr(settings, name, value)


@contextlib.contextmanager
def celery_eager() -> Iterator[None]:
    """Run Celery tasks in this process, to completion, as they are queued; restore the mode and log level after.

    Celery logs every eager task it runs at INFO; thousands of those lines would bury the progress bars.
    """
    trace = logging.getLogger("celery.app.trace")
    previous_eager, previous_level = celery_app.conf.task_always_eager, trace.level
    celery_app.conf.task_always_eager = True
    trace.setLevel(logging.WARNING)
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = previous_eager
        trace.setLevel(previous_level)


@contextlib.contextmanager
def celery_task_signals(*, prerun: Callable[..., None], postrun: Callable[..., None]) -> Iterator[None]:
    """Connect receivers to Celery's task_prerun and task_postrun for the block; disconnect them after."""
    task_prerun.connect(prerun, weak=False)
    task_postrun.connect(postrun, weak=False)
    try:
        yield
    finally:
        task_prerun.disconnect(prerun)
        task_postrun.disconnect(postrun)
