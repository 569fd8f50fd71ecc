"""Request logs without personal data or secrets: no query strings, no download tokens, no end users' external ids.

Query strings carry search and context-preview text; export download links carry their token; API paths carry
end users' external ids. Logs live outside erasure, so these never reach them. `scrub_path` does the rewriting;
`ScrubRequestLogs` applies it to Django's request loggers (`django.server` under runserver, `django.request`) and
`GunicornLogger` to gunicorn's access log (`--logger-class memoryos_site.access_log.GunicornLogger`).
"""

from __future__ import annotations

import logging
import re

from gunicorn.glogging import Logger

HIDDEN = "~"
_SECRETS = [
    (re.compile(r"(/download/)[^/\s?]+"), rf"\g<1>{HIDDEN}"),  # an export's download token
    (re.compile(r"(/api/v1/users/)[^/\s?]+"), rf"\g<1>{HIDDEN}"),  # an end user's external id
]
_QUERY = re.compile(r"\?[^\s\"]*")


def scrub_path(text: str) -> str:
    """`text` (a path, a URL or a request line) without its query string, download token or external id."""
    text = _QUERY.sub("", text)
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


class ScrubRequestLogs(logging.Filter):
    """Rewrite the request line or path in Django's request log records (their str arguments and message)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(scrub_path(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = scrub_path(record.msg)
        return True


class GunicornLogger(Logger):
    """gunicorn's logger, with the request line, path and query of every access log line scrubbed."""

    def atoms(self, resp, req, environ, request_time) -> dict:
        atoms = super().atoms(resp, req, environ, request_time)
        for key in ("r", "U", "f"):
            if isinstance(atoms.get(key), str):
                atoms[key] = scrub_path(atoms[key])
        atoms["q"] = ""
        return atoms
