"""runserver whose request threads close their database connections when they end (`make run` uses it).

Django's development server starts a thread per client connection and never closes that thread's database
connection: with DATABASE_CONN_MAX_AGE above 0 each finished thread leaves one behind, idle, until the garbage
collector happens to free it, and a burst of parallel requests takes the database to its connection limit.
Listed before django.contrib.staticfiles in INSTALLED_APPS so that `manage.py runserver` finds this one.
"""

from __future__ import annotations

from django.contrib.staticfiles.management.commands.runserver import Command as StaticfilesRunserver
from django.core.servers.basehttp import WSGIServer
from django.db import connections


class ConnectionClosingWSGIServer(WSGIServer):
    """Closes a request thread's connections once its client connection is done (as Django's own test server)."""

    def close_request(self, request) -> None:
        connections.close_all()  # runs in the request's thread, whose connections these are
        super().close_request(request)


class Command(StaticfilesRunserver):
    server_cls = ConnectionClosingWSGIServer
