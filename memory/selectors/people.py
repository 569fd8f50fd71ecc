"""Reads of a tenant's people: its end users and assistants, by internal id (the console) or external id (the API).

`<entity>_get` returns one of `tenant` or raises the model's DoesNotExist; `<entity>_list` returns a queryset.
"""

from __future__ import annotations

from django.db.models import QuerySet

from memory.models import Assistant, EndUser, Tenant

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
