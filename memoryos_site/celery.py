"""The Celery app. Broker: CELERY_BROKER_URL, or the same PostgreSQL through kombu's SQLAlchemy transport."""

from __future__ import annotations

import datetime
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


@signals.worker_process_init.connect
def embedder_warm_in_pool_process(**kwargs: object) -> None:
    """Each prefork pool process loads the embedding model as it starts, so its first task does not wait for it, and
    freezes what it has loaded out of the garbage collector's full collections (docs/decisions/0022)."""
    _loaded_and_warming()


@signals.worker_ready.connect
def embedder_warm_in_worker(sender: object = None, **kwargs: object) -> None:
    """A worker that runs tasks in its own process (solo or threads pool) does the same once it is ready."""
    pool = getattr(sender, "pool", None)
    if pool is not None and type(pool).__module__.endswith("prefork"):
        return  # its pool processes warm themselves (above); the parent never embeds
    _loaded_and_warming()


def _loaded_and_warming() -> None:
    from memory.embeddings import embedder_warm_in_background
    from memoryos_site.collector import loaded_objects_freeze

    loaded_objects_freeze()
    embedder_warm_in_background(why="worker", then=lambda: loaded_objects_freeze(collect=False))


# kombu's SQLAlchemy transport hides a message once a worker fetches it and never shows it again, even when the
# worker dies: delivery is at most once. The database's job state makes up for that (memory.services.jobs), so a
# delivered row is dead weight; it is deleted a minute after delivery.
DELIVERED_KEPT = datetime.timedelta(minutes=1)


@app.task(name="memoryos_site.celery.broker_messages_delete_task", acks_late=True)
def broker_messages_delete_task() -> int:
    """Delete the database broker's delivered messages (beat, every minute); Redis deletes them itself."""
    return broker_messages_delete(before=datetime.datetime.now() - DELIVERED_KEPT)


def broker_messages_delete(*, before: datetime.datetime) -> int:
    """Delete messages the SQLAlchemy transport delivered before `before` (naive local time, as kombu writes it)."""
    if not app.conf.broker_url.startswith("sqla+"):
        return 0
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        message = channel.message_cls
        deleted = (
            channel.session.query(message)
            .filter(message.visible.is_(False), message.sent_at < before)
            .delete(synchronize_session=False)
        )
        channel.session.commit()
    return deleted
