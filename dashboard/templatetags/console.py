"""Small template helpers for the console: heat colouring, the action buttons an item offers, dictionary lookups."""

from __future__ import annotations

import functools

from django import template
from django.conf import settings
from django.urls import get_script_prefix, reverse

from dashboard.highlights import highlight
from memory import audit_labels
from memory.items import ITEM_KINDS
from memory.models import LegalHold
from memory.selectors.gdpr import KEPT_TOMBSTONES, erased_total
from memory.selectors.retention import legal_hold_active

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


# the others read as their verb
ACTION_LABELS = {"outdated": "Mark outdated", "current": "Mark current", "flag": "Flag for a supervisor"}


@register.filter
def action_label(action: str) -> str:
    """What an action's button says: "Mark outdated", "Pin"."""
    return ACTION_LABELS.get(action, action.capitalize())


@register.simple_tag
def memory_actions(kind: str, item) -> list[tuple[str, str]]:
    """The (action, label) pairs for an item's buttons: pin or unpin, lock or unlock as its flags stand, mark
    outdated or current as its validity stands."""
    if kind not in ITEM_KINDS:
        return []
    return [(action, action_label(action)) for action in ITEM_KINDS[kind].buttons(item)]


# the actions that answer a flag from the escalations queue (the rest: resolve with a note, or dismiss)
SETTLING = ("edit", "outdated", "forget")


@register.simple_tag
def settle_actions(kind: str, item) -> list[tuple[str, str]]:
    """The (action, label) pairs the escalations queue offers on a flagged item: edit, mark outdated, forget, as the
    item's kind allows."""
    return [(action, label) for action, label in memory_actions(kind, item) if action in SETTLING]


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
    """The rows an erasure deleted, from its counts per table (the audit tombstones it kept are not among them)."""
    return erased_total(counts)


@register.filter
def tombstones(counts: dict) -> int:
    """The audit entries an erasure kept as tombstones (content emptied), from its counts per table."""
    return (counts or {}).get(KEPT_TOMBSTONES, 0)


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
    "memory_memoryimport": "Imported and staged memory bundles",
    "memory_memoryspace": "Memory spaces",
    "memory_legalhold": "Legal holds (released)",
    "memory_enduser": "End user record",
    KEPT_TOMBSTONES: "Audit entries (kept, content emptied)",
    "auth_user": "Login account",
    "django_session": "Login sessions",
}
TARGETS = {
    "memoryspace": "memory",
    "export_job": "export",
    "erasure_receipt": "erasure receipt",
    "memory_import": "memory bundle import",
}
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


IMPORT_KINDS = {
    "memory_spaces": "Memory spaces (one per assistant)",
    "pages": "Pages (turns)",
    "segments": "Topic segments",
    "heat_samples": "Heat history samples",
    "profile_versions": "Profile versions",
    "knowledge": "Knowledge entries",
    "source_links": "Links from facts to their source pages",
    "pinned": "Pinned items",
    "locked": "Locked items",
    "chat_replies": "Chat replies' records",
    "knowledge_already_held": "Facts the user already holds",
}


@register.filter
def import_label(kind: str) -> str:
    """A readable name for a kind in a bundle import's counts."""
    return IMPORT_KINDS.get(kind, kind.replace("_", " "))


@register.filter
def target_label(target_type: str) -> str:
    return TARGETS.get(target_type, target_type.replace("_", " "))


@register.filter
def action_words(code: str) -> str:
    """An audit action code in words (memory.audit_labels)."""
    return audit_labels.action_label(code)


@register.filter
def detail_items(detail) -> list[tuple[str, str]]:
    """An audit entry's detail as (term, value) pairs for a definition list: keys in words, values as text."""
    if not isinstance(detail, dict):
        return [("value", str(detail))]
    return [(str(key).replace("_", " "), _detail_text(value)) for key, value in detail.items()]


def _detail_text(value) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_detail_text(item) for item in value) or "none"
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')}: {_detail_text(v)}" for k, v in value.items())
    return "—" if value is None else str(value)


@register.filter
def highlighted(text: str, prefixes: list[str]):
    """An excerpt of (already masked) `text` around the search's match, escaped, the matched words marked."""
    return highlight(text or "", prefixes or [])


@register.filter
def lookup(mapping: dict, key) -> object:
    """mapping[key], or "" when absent: templates cannot index a dict by a variable."""
    return mapping.get(key, "")


@register.simple_tag
def legal_hold_of(end_user) -> LegalHold | None:
    """The end user's active legal hold, for the user page's hold section. Read here rather than in the view so the
    section stays one include that any page about a user can carry."""
    return legal_hold_active(end_user=end_user)


@register.filter
def masked(text: str, console) -> str:
    """`text` as this operator may see it: the tenant's mask-in-console personal data masked, unless revealed.

    The whole response is masked anyway (dashboard.masking); this filter is for text about to be cut
    (`|masked:console|truncatechars:90`): a value cut in half is no longer found there."""
    return console.mask(text) if console is not None else text
