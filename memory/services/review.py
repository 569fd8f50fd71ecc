"""The review queue of long-term memory: approving, editing and approving, or rejecting a new fact or profile version.

Promotion leaves a fact or profile version pending when the tenant's policy asks for review
(memory.services.personal_data.review_state_for); only approved ones reach a prompt (memory.retrieval). Each
decision is audited with its reason; a rejected item stays stored, marked, so that promotion does not learn the same
fact again, and it can still be forgotten like any other.
"""

from __future__ import annotations

from django.db import transaction

from memory.models import KnowledgeEntry, ProfileVersion, ReviewState
from memory.services.audit import Actor
from memory.services.embedding_state import embedder_for_store
from memory.services.governance import GovernanceError, _audit, _item_owner_lock, _reason, _text
from memory.services.personal_data import text_for_storage
from memory.services.promotion import text_hash

APPROVE, REJECT = "approve", "reject"


def _decision_checked(item, decision: str, text: str | None, reason: str) -> tuple[str | None, str]:
    if decision not in (APPROVE, REJECT):
        raise GovernanceError("the decision is approve or reject")
    if item.review_state != ReviewState.PENDING:
        raise GovernanceError(f"this {item.item_kind.replace('_', ' ')} is not awaiting review")
    if decision == REJECT and text is not None:
        raise GovernanceError("a rejected item is not edited")
    if text is not None:
        text = text_for_storage(tenant=item.end_user.tenant_id, text=_text(text, "text"))
        text = None if text == item.text else text
    if decision == REJECT or text is not None:
        return text, _reason(reason)  # rejecting or changing the text needs a reason
    return text, (reason or "").strip()[:500] or "approved in review"


@transaction.atomic
def knowledge_review(
    *, entry: KnowledgeEntry, decision: str, actor: Actor, reason: str = "", text: str | None = None, request_id=""
) -> KnowledgeEntry:
    """Approve (with `text`: edit, then approve) or reject a pending fact; audited as knowledge.approve/reject.

    Raises GovernanceError when the fact is not pending, the decision is unknown, a reason is missing (rejecting
    or editing needs one) or the edited text is already another fact of the same store.
    """
    text, reason = _decision_checked(entry, decision, text, reason)
    _item_owner_lock(entry)
    before = entry.text
    if text is not None:
        store = KnowledgeEntry.objects.filter(end_user_id=entry.end_user_id, kind=entry.kind, assistant=entry.assistant)
        if store.filter(text_hash=text_hash(text)).exclude(pk=entry.pk).exists():
            raise GovernanceError("that text is already another fact: reject this one instead")
        entry.text, entry.text_hash = text, text_hash(text)
        entry.embedding = embedder_for_store().embed([text])[0]
    entry.review_state = ReviewState.APPROVED if decision == APPROVE else ReviewState.REJECTED
    entry.save(update_fields=["text", "text_hash", "embedding", "review_state"])
    after = entry.text if text is not None else None
    action = f"knowledge.{decision}"
    before = before if after else None
    _audit(entry, actor=actor, action=action, reason=reason, before=before, after=after, request_id=request_id)
    return entry


@transaction.atomic
def profile_version_review(
    *, version: ProfileVersion, decision: str, actor: Actor, reason: str = "", text: str | None = None, request_id=""
) -> ProfileVersion:
    """Approve (with `text`: edit, then approve) or reject a pending profile version; audited.

    An approved version becomes the profile prompts use when no newer one is approved. Raises GovernanceError as
    knowledge_review does.
    """
    text, reason = _decision_checked(version, decision, text, reason)
    _item_owner_lock(version)
    before = version.text
    if text is not None:
        version.text = text
    version.review_state = ReviewState.APPROVED if decision == APPROVE else ReviewState.REJECTED
    version.save(update_fields=["text", "review_state"])
    after = version.text if text is not None else None
    before = before if after else None
    action = f"profile.{decision}"
    _audit(version, actor=actor, action=action, reason=reason, before=before, after=after, request_id=request_id)
    return version
