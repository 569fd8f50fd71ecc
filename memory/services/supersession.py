"""A later fact replaces an earlier one: the earlier stays as history (valid until the later became true), never
current memory again (memory.retrieval reads only current facts).

Promotion calls `knowledge_supersede` with the facts it has just stored: a model names the fact each one replaces
(Facts.replaces); for what it does not name, and offline, memory.validity's rule decides (the same slot, another
value). Only approved facts replace others: a fact awaiting review replaces nothing until a reviewer approves it
(memory.services.review calls `knowledge_supersede` then). Idempotent: a fact is superseded once (a conditional
UPDATE), whoever asks again.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.models import KnowledgeEntry, ReviewState
from memory.models.tiers import KnowledgeKind
from memory.services.audit import Actor, audit_record
from memory.services.webhook_events import Event, item_data, webhook_events_emit
from memory.validity import Claim, claims

# A user's current facts are at most the store's capacity (MEMORY_KNOWLEDGE_CAPACITY), so reading them whole and
# applying the rule in Python costs a few milliseconds, and it also reads facts stored before slots existed.
FIELDS = ("id", "text", "valid_from", "created_at", "kind", "end_user_id")


@dataclass(frozen=True)
class Supersession:
    earlier_id: int
    later_id: int
    by: str  # "model" (it named the replaced fact) or "rule" (memory.validity)


def knowledge_supersede(
    *, entries: list[KnowledgeEntry], named: dict[int, int] | None = None, actor: Actor | None = None
) -> list[Supersession]:
    """Supersede every current fact that one of `entries` (approved user facts of one user) replaces.

    `named` maps an entry's id to the id of the fact a model said it replaces. Of two facts of one slot, the one that
    became true later is current, whichever was stored last; a model's update replaces the fact it names.
    Side effects: the earlier fact's `valid_to` (when the later one became true) and `superseded_by`, one audit
    entry (knowledge.supersede) each. Returns what it changed.
    """
    named = named or {}
    entries = [e for e in entries if e.kind == KnowledgeKind.USER and e.review_state == ReviewState.APPROVED]
    if not entries:
        return []
    current = _current_facts(entries[0].end_user_id)
    by_id = {fact.id: fact for fact in current}
    said = {fact.id: claims(fact.text) for fact in current}  # each fact's claims, read once
    done: list[Supersession] = []
    for entry in sorted((by_id[e.id] for e in entries if e.id in by_id), key=_since):
        for other in current:
            if other.id == entry.id or other.valid_to is not None or entry.valid_to is not None:
                continue
            by = "model" if named.get(entry.id) == other.id else _rule_between(entry, other, said)
            if by:
                # a model's update names the fact it replaces; the rule goes by when each became true
                newer = by == "model" or _since(other) <= _since(entry)
                earlier, later = (other, entry) if newer else (entry, other)
                if _superseded(earlier, later):
                    done.append(Supersession(earlier.id, later.id, by))
    _audit(done, actor or Actor.system("promotion"), {fact.id: fact.text for fact in current})
    return done


def _current_facts(end_user_id: int) -> list[KnowledgeEntry]:
    return list(
        KnowledgeEntry.objects.filter(end_user_id=end_user_id, kind=KnowledgeKind.USER, valid_to__isnull=True)
        .filter(review_state=ReviewState.APPROVED)
        .only(*FIELDS)
        .order_by("valid_from", "id")
    )


def _since(entry: KnowledgeEntry):
    return entry.valid_from or entry.created_at


def _rule_between(one: KnowledgeEntry, other: KnowledgeEntry, said: dict[int, list[Claim]]) -> str:
    """ "rule" when one of the two facts, said after the other, replaces it by memory.validity's rule (`said`: each
    fact's claims)."""
    earlier, later = (other, one) if _since(other) <= _since(one) else (one, other)
    if _replaces(said[later.id], said[earlier.id]):
        return "rule"
    return ""


def _replaces(later: list[Claim], earlier: list[Claim]) -> bool:
    return any(new.replaces(old) for new in later for old in earlier)


def _superseded(earlier: KnowledgeEntry, later: KnowledgeEntry) -> bool:
    """Mark `earlier` replaced by `later`, once: False when it was no longer current."""
    until = max(_since(later), _since(earlier))
    changed = KnowledgeEntry.objects.filter(pk=earlier.pk, valid_to__isnull=True).update(
        valid_to=until, superseded_by=later.pk
    )
    if changed:
        earlier.valid_to, earlier.superseded_by_id = until, later.pk
    return bool(changed)


def _audit(done: list[Supersession], actor: Actor, texts: dict[int, str]) -> None:
    """An audit entry per supersession, and its `fact.superseded` event after commit (`texts`: each fact's text)."""
    if not done:
        return
    entries = KnowledgeEntry.objects.select_related("end_user")
    entries = entries.only("id", "end_user__tenant_id", "end_user__id", "end_user__external_id")
    by_id = {entry.id: entry for entry in entries.filter(id__in=[s.earlier_id for s in done])}
    for supersession in done:
        entry = by_id[supersession.earlier_id]
        audit_record(
            tenant=entry.end_user.tenant_id, actor=actor, action="knowledge.supersede", end_user=entry.end_user,
            target_type="knowledge", target_id=entry.id, reason=f"replaced by fact #{supersession.later_id}",
            detail={"superseded_by": supersession.later_id, "by": supersession.by},
        )  # fmt: skip
    owner = by_id[done[0].earlier_id].end_user  # one user's facts
    webhook_events_emit(tenant_id=owner.tenant_id, events=[_superseded_event(s, owner, texts) for s in done])


def _superseded_event(supersession: Supersession, owner, texts: dict[int, str]) -> Event:
    earlier, later = supersession.earlier_id, supersession.later_id
    data = {
        "user": owner.external_id,
        "item": item_data(kind="knowledge", id=earlier, text=texts.get(earlier)),
        "superseded_by": item_data(kind="knowledge", id=later, text=texts.get(later)),
        "by": supersession.by,
    }
    return Event("fact.superseded", data, subject_id=owner.pk)
