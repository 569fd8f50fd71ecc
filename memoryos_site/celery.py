"""The Celery app. Broker: CELERY_BROKER_URL, or the same PostgreSQL through kombu's SQLAlchemy transport."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

app = Celery("memoryos")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
