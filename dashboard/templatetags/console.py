"""Small template helpers for the console: heat colouring, the action buttons an item offers, dictionary lookups."""

from __future__ import annotations

import functools

from django import template
from django.conf import settings
from django.urls import get_script_prefix, reverse

from memory.items import ITEM_KINDS

register = template.Library()


@register.simple_tag
def tau() -> float:
    """The promotion threshold τ."""
    return settings.MEMORY_PROMOTION_THRESHOLD


@register.filter
def heat_class(value: float | None) -> str:
    """`heat-hot` at or above τ (promotion is due), `heat-warm` above half of it, else `heat-cool`."""
    if value is None:
        return "heat-none"
    threshold = settings.MEMORY_PROMOTION_THRESHOLD
    if value >= threshold:
        return "heat-hot"
    return "heat-warm" if value >= threshold / 2 else "heat-cool"


@register.simple_tag
def memory_actions(kind: str, item) -> list[tuple[str, str]]:
    """The (action, label) pairs for an item's buttons: pin or unpin, lock or unlock as its flags stand."""
    if kind not in ITEM_KINDS:
        return []
    return [(action, action.capitalize()) for action in ITEM_KINDS[kind].buttons(item)]


@functools.lru_cache(maxsize=512)
def _action_path(prefix: str, slug: str, kind: str, action: str) -> str:
    return reverse("console:action", args=[slug, kind, 0, action])


@register.simple_tag
def action_url(slug: str, kind: str, item_id: int, action: str) -> str:
    """The URL of `action` on one item: {% url 'console:action' ... %}, but reversed once per tenant, kind and action
    (a long table of facts asks for it four times a row, and reversing is most of its rendering time)."""
    head, _, tail = _action_path(get_script_prefix(), slug, kind, action).rpartition("/0/")
    return f"{head}/{int(item_id)}/{tail}"


@register.filter
def total(counts: dict) -> int:
    """The sum of a dict of counts (an erasure receipt's rows per table)."""
    return sum(v for v in (counts or {}).values() if isinstance(v, int))


TABLES = {
    "memory_chatreply": "Chat replies",
    "memory_heatsample": "Heat history samples",
    "memory_knowledgeentry": "Knowledge entries",
    "memory_profileversion": "Profile versions",
    "memory_page": "Pages (turns)",
    "memory_segment": "Topic segments",
    "memory_memoryevent": "Updating events",
    "memory_idempotentrequest": "Stored API answers",
    "memory_exportjob": "Exports",
    "memory_memoryspace": "Memory spaces",
    "memory_enduser": "End user record",
    "memory_auditentry (tombstoned)": "Audit entries (content emptied)",
    "auth_user": "Login account",
    "django_session": "Login sessions",
}
TARGETS = {"memoryspace": "memory", "export_job": "export", "erasure_receipt": "erasure receipt"}
TARGETS |= {kind.name: kind.label for kind in ITEM_KINDS.values()}


@register.filter
def table_label(table: str) -> str:
    """A readable name for a table in erasure counts."""
    return TABLES.get(table, table)


@register.filter
def by_table(counts: dict) -> list[tuple[str, int]]:
    """Erasure counts in a stable, readable order (the database's JSON does not keep the original order)."""
    order = list(TABLES)
    return sorted((counts or {}).items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))


@register.filter
def target_label(target_type: str) -> str:
    return TARGETS.get(target_type, target_type.replace("_", " "))


@register.filter
def lookup(mapping: dict, key) -> object:
    """mapping[key], or "" when absent: templates cannot index a dict by a variable."""
    return mapping.get(key, "")
