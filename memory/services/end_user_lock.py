"""The per-end-user write lock every write about an end user takes first, and the refusal once they are closed."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from memory.models import EndUser

# The write lock taken by the update of the end user's last activity (the same row lock: FOR NO KEY UPDATE).
TOUCH_SQL = "UPDATE memory_enduser SET last_active_at = %s WHERE id = %s RETURNING is_active"


class EndUserClosed(Exception):
    """Nothing more may be stored about this end user: deactivated, or `erased` (being erased or already gone)."""

    def __init__(self, *, erased: bool) -> None:
        super().__init__("the end user has been erased" if erased else "the end user is deactivated")
        self.erased = erased


def end_user_write_lock(
    end_user: EndUser, *, inactive_ok: bool = False, last_active_at: datetime | None = None
) -> None:
    """Take the per-user write lock (a row lock on the end user) inside the caller's transaction, or refuse.

    Every write about an end user takes this lock first and erasure takes it exclusively (FOR UPDATE) before it
    deletes, so a write either commits before an erasure starts deleting or is refused once it has begun: one lock
    order (end user, then memory spaces in id order) for every writer, so they cannot deadlock. Raises
    EndUserClosed when the end user is gone, or deactivated unless `inactive_ok`. With `last_active_at` the lock
    is taken by setting the end user's last activity to it (one statement for both; it rolls back with a refusal).
    """
    if last_active_at is not None:
        with connection.cursor() as cursor:
            cursor.execute(TOUCH_SQL, [last_active_at, end_user.pk])
            row = cursor.fetchone()
        active = row[0] if row else None
    else:
        locked = EndUser.objects.select_for_update(no_key=True).filter(pk=end_user.pk)
        active = next(iter(locked.values_list("is_active", flat=True)), None)
    if active is None or not (active or inactive_ok):
        raise EndUserClosed(erased=active is None)


def end_user_closed_check(end_user: EndUser, *, inactive_ok: bool = False) -> None:
    """Raise EndUserClosed when the end user has been erased (or deactivated, unless `inactive_ok`) since read."""
    active = EndUser.objects.filter(pk=end_user.pk).values_list("is_active", flat=True).first()
    if active is None or not (active or inactive_ok):
        raise EndUserClosed(erased=active is None)
