"""Request logs keep no query text, download tokens or external ids: logs live outside erasure."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from memoryos_site.access_log import GunicornLogger, scrub_path


@pytest.mark.parametrize(
    ("logged", "kept"),
    [
        ("GET /console/acme/users/4/preview/?q=my+diagnosis HTTP/1.1", "GET /console/acme/users/4/preview/ HTTP/1.1"),
        ("/console/acme/exports/7/download/s3cr3t-token/", "/console/acme/exports/7/download/~/"),
        ("POST /api/v1/users/alice-smith/erasure/ HTTP/1.1", "POST /api/v1/users/~/erasure/ HTTP/1.1"),
        ("/console/acme/audit/?user=alice&since=2024-01-01", "/console/acme/audit/"),
    ],
)
def test_paths_lose_their_query_token_and_external_id(logged, kept):
    assert scrub_path(logged) == kept


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("name", ["django.server", "django.request"])
def test_djangos_request_loggers_write_scrubbed_lines(name):
    capture = _Capture()
    logger = logging.getLogger(name)
    logger.addHandler(capture)
    try:
        logger.warning('"%s" %s %s', "GET /console/acme/users/?q=alice@example.com HTTP/1.1", 200, 10)
        logger.warning("Not Found: /api/v1/users/bob-jones/export/")
    finally:
        logger.removeHandler(capture)

    assert capture.lines == ['"GET /console/acme/users/ HTTP/1.1" 200 10', "Not Found: /api/v1/users/~/export/"]


def test_gunicorns_access_log_atoms_are_scrubbed():
    class Response:
        status = "200 OK"
        response_length = sent = 10
        headers: list = []

    class Request:
        method, path, query, uri, version = "GET", "/api/v1/users/alice/", "x=1", "/api/v1/users/alice/?x=1", (1, 1)
        headers: list = []

    environ = {"REQUEST_METHOD": "GET", "RAW_URI": "/api/v1/users/alice/?x=1", "PATH_INFO": "/api/v1/users/alice/"}
    environ |= {"QUERY_STRING": "x=1", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "10.0.0.1"}
    atoms = GunicornLogger.atoms(object.__new__(GunicornLogger), Response(), Request(), environ, timedelta(0))

    assert atoms["r"] == "GET /api/v1/users/~/ HTTP/1.1" and atoms["U"] == "/api/v1/users/~/" and atoms["q"] == ""
