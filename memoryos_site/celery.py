"""The Celery app. Broker: CELERY_BROKER_URL, or the same PostgreSQL through kombu's SQLAlchemy transport."""

from __future__ import annotations

import os

from celery import Celery, signals

from memoryos_site.database import embedded_server_ensure

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

app = Celery("memoryos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
@signals.beat_init.connect
def embedded_database_start(**kwargs: object) -> None:
    """Start the embedded PostgreSQL before a worker or beat connects: the default broker lives there."""
    from django.conf import settings

    if settings.EMBEDDED_DATABASE:
        embedded_server_ensure(settings.EMBEDDED_PGDATA)
