"""Whether the read replica may serve the console's reads now: it answers, and its replay lags the primary by at most
DATABASE_REPLICA_MAX_LAG_SECONDS.

Each process asks the replica for its lag (one query) at most once every CHECK_SECONDS and keeps the answer. While
the answer is "usable", a request that reads the replica first checks that its connection answers (the round trip
that Django's CONN_HEALTH_CHECKS makes anyway, moved before the first query), so a replica that went down sends that
request to the primary instead of failing it. A replica found down or lagging is left alone until the next check,
with one warning per check.
"""

from __future__ import annotations

import logging
import time
from contextlib import suppress
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connections

REPLICA = "replica"
CHECK_SECONDS = 5.0
# How many seconds the replica's replay is behind. 0 when it has replayed all it received: an idle primary sends
# nothing, and the time since the last replayed transaction would then count as lag. 0 on a server that is not a
# standby (the tests' mirror of the primary). NULL, unknown, when it streams from no primary, or has received WAL but
# replayed no transaction since it started.
LAG_SQL = """
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0
    WHEN NOT EXISTS (SELECT FROM pg_stat_wal_receiver) THEN NULL
    WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
    ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())
END
"""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Health:
    usable: bool
    checked_at: float  # time.monotonic()


# One per process. Two threads may find it stale and both check: one query more, no harm, so no lock.
_last: _Health | None = None


def replica_usable() -> bool:
    """Whether a request may read the replica now: the process's last check (renewed every CHECK_SECONDS) found it
    answering and near enough, and its connection answers. Never raises: a failure is logged and means no."""
    last = _last
    if last is None or time.monotonic() - last.checked_at >= CHECK_SECONDS:
        return _check()
    if last.usable and not _answers():
        return _record(False, "its connection failed")
    return last.usable


def health_forget() -> None:
    """Forget the last check, so that the next read checks again (tests; a shell after the replica was mended)."""
    global _last
    _last = None


def _check() -> bool:
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute(LAG_SQL)
            (lag,) = cursor.fetchone()
    except DatabaseError as exc:
        _close_replica()
        return _record(False, f"it does not answer ({type(exc).__name__}: {str(exc).strip()})")
    limit = settings.DATABASE_REPLICA_MAX_LAG_SECONDS
    if lag is None:
        return _record(False, "its lag is unknown: it streams from no primary, or has replayed nothing yet")
    if float(lag) > limit:
        return _record(False, f"it lags the primary by {float(lag):.1f} s, past DATABASE_REPLICA_MAX_LAG_SECONDS")
    return _record(True)


def _answers() -> bool:
    """Whether the replica's connection answers, reconnecting if the server dropped it."""
    replica = connections[REPLICA]
    try:
        if replica.connection is not None and not replica.is_usable():
            replica.close()
        replica.ensure_connection()
    except DatabaseError:
        _close_replica()
        return False
    replica.health_check_done = True  # just checked: Django need not check again before this request's first query
    return True


def _close_replica() -> None:
    with suppress(DatabaseError):
        connections[REPLICA].close()


def _record(usable: bool, why: str = "") -> bool:
    global _last
    was_usable = _last is None or _last.usable
    _last = _Health(usable=usable, checked_at=time.monotonic())
    if not usable:
        logger.warning(
            "The console reads the primary for %.0f s: the read replica is left aside, %s.",
            CHECK_SECONDS,
            why,
        )
    elif not was_usable:
        logger.info("The console reads the read replica again.")
    return usable
