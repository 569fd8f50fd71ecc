"""A process keeps its database connection from one request to the next, and a connection the server dropped is
replaced at the next request rather than failing it."""

from __future__ import annotations

import psycopg
import pytest
from django.core.signals import request_finished, request_started
from django.db import connection


def a_request() -> int:
    """What a WSGI server does around one request that reads the database: the backend's process id."""
    request_started.send(sender=None)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]
    finally:
        request_finished.send(sender=None)


@pytest.mark.django_db(transaction=True)
def test_the_next_request_reuses_the_connection():
    assert a_request() == a_request()


@pytest.mark.django_db(transaction=True)
def test_a_connection_the_server_dropped_is_replaced_at_the_next_request():
    first = a_request()
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [first])
    assert a_request() != first
