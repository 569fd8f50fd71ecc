"""Reads of a tenant's people: its end users and assistants, by internal id (the console) or external id (the API).

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist; `<entity>_list` returns a queryset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Model, QuerySet

from memory.models import Assistant, EndUser, MemorySpace, PersonalDataPolicy, Tenant
from memory.retrieval.rows import columns, instances

M = TypeVar("M", bound=Model)

ASSISTANT_ORDER = {"external_id": ("external_id",), "name": ("name", "id")}


def _one_key(id: int | None, external_id: str | None) -> dict:
    """The lookup for exactly one of an internal or an external id (never both, never neither: that is a bug)."""
    if (id is None) == (external_id is None):
        raise TypeError("pass exactly one of id and external_id")
    return {"pk": id} if id is not None else {"external_id": external_id}


def end_user_list(*, tenant: Tenant, active: bool | None = None, external_id: str | None = None) -> QuerySet[EndUser]:
    """The tenant's end users by external id, optionally only the (in)active ones or the one with `external_id`."""
    users = EndUser.objects.filter(tenant=tenant).order_by("external_id")
    if active is not None:
        users = users.filter(is_active=active)
    return users if external_id is None else users.filter(external_id=external_id)


def end_user_get(*, tenant: Tenant, id: int | None = None, external_id: str | None = None) -> EndUser:
    """The end user `id` (or `external_id`) of `tenant`, with the tenant."""
    return EndUser.objects.select_related("tenant").get(tenant=tenant, **_one_key(id, external_id))


def assistant_list(
    *, tenant: Tenant, active: bool | None = None, external_id: str | None = None, order: str = "external_id"
) -> QuerySet[Assistant]:
    """The tenant's assistants, by external id (the API) or by `order="name"` (the chat's picker)."""
    assistants = Assistant.objects.filter(tenant=tenant).order_by(*ASSISTANT_ORDER[order])
    if active is not None:
        assistants = assistants.filter(is_active=active)
    return assistants if external_id is None else assistants.filter(external_id=external_id)


def assistant_get(*, tenant: Tenant, external_id: str, active: bool | None = None) -> Assistant:
    """The assistant `external_id` of `tenant` (only an active one when `active` is True)."""
    assistants = Assistant.objects.filter(tenant=tenant)
    return (assistants if active is None else assistants.filter(is_active=active)).get(external_id=external_id)


@dataclass(frozen=True)
class ConversationRead:
    """What one statement read of a conversation an integration names by external ids. `assistants`: the named one
    (active or not), or when none is named the tenant's first two active ones; `end_user`: the user, None before
    their first turn; `space`: the pair's memory space with the first assistant, None before its first turn (both
    hold the read end user and assistant); `policy`: the tenant's personal data policy, or its unsaved defaults."""

    assistants: list[Assistant]
    end_user: EndUser | None
    space: MemorySpace | None
    policy: PersonalDataPolicy


def _aliased(model: type[Model], alias: str) -> str:
    return ", ".join(f"{alias}.{column}" for column in columns(model).split(", "))


@cache
def _conversation_sql() -> str:
    return f"""
SELECT {_aliased(Assistant, "a")}, {_aliased(EndUser, "u")}, {_aliased(MemorySpace, "s")},
       {_aliased(PersonalDataPolicy, "p")}
FROM {Assistant._meta.db_table} a
LEFT JOIN {EndUser._meta.db_table} u ON u.tenant_id = a.tenant_id AND u.external_id = %(user)s
LEFT JOIN {MemorySpace._meta.db_table} s ON s.end_user_id = u.id AND s.assistant_id = a.id
LEFT JOIN {PersonalDataPolicy._meta.db_table} p ON p.tenant_id = a.tenant_id
WHERE a.tenant_id = %(tenant)s AND CASE WHEN %(named)s THEN a.external_id = %(assistant)s ELSE a.is_active END
ORDER BY a.external_id
LIMIT 2
"""


def conversation_read(*, tenant: Tenant, user: str, assistant: str | None) -> ConversationRead:
    """The assistant `assistant` (by external id; None: the tenant's active ones), the end user `user`, their memory
    space and the tenant's personal data policy, in one statement: what a reply or a turn reads before it retrieves
    or is stored, which took four queries one after another. Applies no rule: the caller decides what a missing or
    inactive party means (memory.services.conversation.conversation_for)."""
    params: dict[str, Any] = {
        "tenant": tenant.pk,
        "user": user,
        "named": assistant is not None,
        "assistant": assistant or "",
    }
    with connection.cursor() as cursor:
        cursor.execute(_conversation_sql(), params)
        rows = cursor.fetchall()
    widths = [len(columns(model).split(", ")) for model in (Assistant, EndUser, MemorySpace, PersonalDataPolicy)]
    parts = [[_slice(row, widths, i) for row in rows] for i in range(4)]
    assistants = instances(Assistant, parts[0])
    for found in assistants:
        found.tenant = tenant
    end_user = _first(EndUser, parts[1][:1])
    if end_user is not None:
        end_user.tenant = tenant
    space = _first(MemorySpace, parts[2][:1]) if end_user is not None else None
    if space is not None and end_user is not None:
        space.end_user, space.assistant = end_user, assistants[0]
    policy = _first(PersonalDataPolicy, parts[3][:1]) or PersonalDataPolicy(tenant_id=tenant.pk)
    return ConversationRead(assistants, end_user, space, policy)


def _slice(row: tuple, widths: list[int], index: int) -> tuple:
    start = sum(widths[:index])
    return row[start : start + widths[index]]


def _first(model: type[M], rows: list[tuple]) -> M | None:
    """The instance of the first row, or None when there is none or its LEFT JOIN found nothing (a NULL id)."""
    found = [row for row in rows if row[0] is not None]
    return instances(model, found)[0] if found else None
