"""The database broker (kombu's SQLAlchemy transport) only hides a delivered message; beat's cleanup deletes it."""

from __future__ import annotations

import datetime
import uuid

import pytest
from django.db import connection

from memoryos_site.celery import app as celery_app
from memoryos_site.celery import broker_messages_delete
from memoryos_site.database import sqlalchemy_broker_url
from tests.foundation.processes import publishing_to

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the broker's own connection must see the test database
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),  # inside kombu
]


def messages_of(queue: str) -> dict[bool, int]:
    """How many rows the broker holds for `queue`, by visibility."""
    with celery_app.connection_for_write() as conn:
        channel = conn.default_channel
        message = channel.message_cls
        try:
            rows = channel.session.query(message).filter(message.queue_id == channel._get_or_create(queue).id)
            return {visible: rows.filter(message.visible.is_(visible)).count() for visible in (True, False)}
        finally:
            channel.session.close()  # give its connection back, so that the test database can be dropped


def test_a_delivered_message_is_deleted_and_a_waiting_one_kept():
    queue = f"memoryos-test-{uuid.uuid4().hex[:12]}"
    with publishing_to(sqlalchemy_broker_url(connection.settings_dict), queue=queue):
        with celery_app.connection_for_write() as conn:
            simple = conn.SimpleQueue(queue)
            simple.put({"n": 1})
            simple.put({"n": 2})
            simple.get(timeout=5).ack()
        assert messages_of(queue) == {True: 1, False: 1}  # acknowledged, yet still there

        deleted = broker_messages_delete(before=datetime.datetime.now() + datetime.timedelta(minutes=1))

        assert deleted == 1 and messages_of(queue) == {True: 1, False: 0}
        with celery_app.connection_for_write() as conn:
            conn.SimpleQueue(queue).clear()


def test_the_cleanup_leaves_redis_alone(settings):
    with publishing_to("redis://127.0.0.1:6379/15", queue="unused"):
        assert broker_messages_delete(before=datetime.datetime.now()) == 0
