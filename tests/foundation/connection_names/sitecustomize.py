"""Names each PostgreSQL connection a child process opens by process, thread and opener (`application_name`).

A test puts this folder on a child's PYTHONPATH (`processes.connections_named`); Python imports `sitecustomize` as it
starts, before Django. pg_stat_activity then says which process and thread holds each connection, and whether
Django (`dj`), a side reader (`side`) or the broker's SQLAlchemy engine (`broker`) opened it."""

from __future__ import annotations

import os
import sys
import threading
import traceback

try:
    import psycopg
except ImportError:  # a child that never talks to PostgreSQL
    psycopg = None


def _process() -> str:
    argv = " ".join(sys.argv)
    role = "worker" if "celery" in argv else "web" if "runserver" in argv else os.path.basename(sys.argv[0])
    return f"{role}:{os.getpid()}"


def _opener() -> str:
    stack = "".join(traceback.format_stack(limit=60))
    return "broker" if "sqlalchemy" in stack else "side" if "memory/retrieval/side_readers.py" in stack else "dj"


if psycopg is not None:
    _connect = psycopg.Connection.connect.__func__

    def _named_connect(cls, conninfo: str = "", **kwargs):
        thread = threading.current_thread().name[:20]
        kwargs.setdefault("application_name", f"{_process()}:{thread}:{_opener()}"[:63])
        return _connect(cls, conninfo, **kwargs)

    psycopg.Connection.connect = classmethod(_named_connect)
    psycopg.connect = psycopg.Connection.connect  # Django and SQLAlchemy call the module's alias
