"""The review queue of long-term memory: approving, editing and approving, or rejecting a new fact or profile version.

Promotion leaves a fact or profile version pending when the tenant's policy asks for review
(memory.services.personal_data.review_state_for); only approved ones reach a prompt (memory.retrieval). Each
decision is audited with its reason; a rejected item stays stored, marked, so that promotion does not learn the same
fact again, and it can still be forgotten like any other.

A rejection holds on every path (issue 30): the fact's text is withdrawn from the user's pending and current profile
versions (memory.profile_withdrawal), approving a profile version strips any rejected fact's text first, and the
turns the fact was learnt from are withheld from retrieval (Page.withheld) unless pinned, or forgotten with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F

from memory.models import KnowledgeEntry, LegalHold, Page, ProfileVersion, ReviewState
from memory.models.job_leases import JobKind
from memory.models.tiers import KnowledgeKind, ProfileAuthor
from memory.profile_withdrawal import ProfileChange, ProfileWithdrawal, profile_without
from memory.selectors.forgetting import ForgetImpact, plan_pages_forget
from memory.selectors.review import profile_withdrawals
from memory.services.audit import Actor, audit_record
from memory.services.embedding_state import embedder_for_store
from memory.services.governance import GovernanceError, _audit, _item_owner_lock, _reason, _text, pages_forget
from memory.services.jobs import jobs_due
from memory.services.legal_hold import legal_hold_check, legal_hold_for_deletion
from memory.services.personal_data import text_for_storage
from memory.services.promotion import text_hash
from memory.services.supersession import knowledge_supersede
from memory.services.webhook_events import fact_item, item_data, webhook_event_emit
from memory.validity import first_slot

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

    Rejecting also withdraws the fact's text from the user's pending and current profile versions and withholds the
    turns it was learnt from (unless pinned); the returned entry's `rejection` (a Rejection) says what changed.
    Raises GovernanceError when the fact is not pending, the decision is unknown, a reason is missing (rejecting
    or editing needs one) or the edited text is already another fact of the same store.
    """
    return _knowledge_decide(entry, decision, actor=actor, reason=reason, text=text, request_id=request_id)


def _knowledge_decide(entry, decision, *, actor, reason, text, request_id, turns_withheld: bool = True):
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
    _decision_emit(entry, decision, fact_item(entry))
    if decision == REJECT:
        who = {"actor": actor, "reason": reason, "request_id": request_id}
        entry.rejection = _rejection_apply(entry, turns_withheld=turns_withheld, **who)
    else:  # a fact awaiting review replaced nothing; approved, it replaces what it gives a new value of
        entry.slot = first_slot(entry.text)[:80] if entry.kind == KnowledgeKind.USER else ""
        KnowledgeEntry.objects.filter(pk=entry.pk).update(slot=entry.slot)
        knowledge_supersede(entries=[entry], actor=actor)
    return entry


@transaction.atomic
def profile_version_review(
    *, version: ProfileVersion, decision: str, actor: Actor, reason: str = "", text: str | None = None, request_id=""
) -> ProfileVersion:
    """Approve (with `text`: edit, then approve) or reject a pending profile version; audited.

    An approved version becomes the profile prompts use when no newer one is approved. Before it does, the text of
    every rejected fact of the user is taken out of it (audited as profile.withdraw; a paraphrase marks it stale, so
    it is withheld until re-derived); `withdrawn` on the returned version says what. Raises GovernanceError as
    knowledge_review does.
    """
    text, reason = _decision_checked(version, decision, text, reason)
    _item_owner_lock(version)
    before: str | None = version.text
    if text is not None:
        version.text = text
    version.review_state = ReviewState.APPROVED if decision == APPROVE else ReviewState.REJECTED
    version.save(update_fields=["text", "review_state"])
    after = version.text if text is not None else None
    before = before if after else None
    action = f"profile.{decision}"
    _audit(version, actor=actor, action=action, reason=reason, before=before, after=after, request_id=request_id)
    version.withdrawn = None
    if decision == APPROVE:
        why = "the text of rejected facts is withdrawn before approval"
        version.withdrawn = _rejected_facts_strip(version, actor=actor, reason=why, request_id=request_id)
    shown = version.review_state == ReviewState.APPROVED and not version.stale  # a stale one is withheld
    _decision_emit(
        version, decision, item_data(kind="profile_version", id=version.pk, text=version.text if shown else None)
    )
    return version


def _decision_emit(item, decision: str, named: dict) -> None:
    """`review.approved` (with the approved text) or `review.rejected` (ids only), after commit."""
    owner = item.end_user
    kind = "review.approved" if decision == APPROVE else "review.rejected"
    data = {"user": owner.external_id, "item": named}
    webhook_event_emit(tenant_id=owner.tenant_id, type=kind, data=data, subject_id=owner.pk)


# --- What a rejection withdraws: profile text and source turns ------------------------------------------------------


@dataclass(frozen=True)
class Rejection:
    """What rejecting a fact changed besides the fact: profile versions, turns withheld, pinned turns kept."""

    profile_changes: list[ProfileChange] = field(default_factory=list)
    turns_withheld: list[Page] = field(default_factory=list)
    turns_kept_pinned: list[Page] = field(default_factory=list)

    @property
    def removed_from_profile(self) -> list[str]:
        return list(dict.fromkeys(text for change in self.profile_changes for text in change.removed))


def _rejection_apply(entry: KnowledgeEntry, *, turns_withheld: bool, **who) -> Rejection:
    withdrawals = profile_withdrawals(end_user_id=entry.end_user_id, facts=[entry.text])
    changes = [_withdraw(version, withdrawal, **who) for version, withdrawal in withdrawals]
    if not turns_withheld:
        return Rejection(profile_changes=changes)
    withheld, pinned = _source_turns_withhold(entry, **who)
    return Rejection(profile_changes=changes, turns_withheld=withheld, turns_kept_pinned=pinned)


def _withdraw(version: ProfileVersion, withdrawal: ProfileWithdrawal, **who) -> ProfileChange:
    if version.review_state == ReviewState.PENDING:
        return _pending_rewrite(version, withdrawal, **who)
    if not withdrawal.changed:
        return _current_mark_stale(version, withdrawal, **who)
    return _current_replace(version, withdrawal, **who)


def _pending_rewrite(version: ProfileVersion, withdrawal: ProfileWithdrawal, *, actor, reason, request_id):
    """Rewrite a version awaiting review in place: its review then never shows (or approves) the rejected text."""
    before = version.text
    version.text, version.stale = withdrawal.text, version.stale or withdrawal.needs_rederiving
    ProfileVersion.objects.filter(pk=version.pk).update(text=version.text, stale=version.stale)
    _withdrawal_audit(version, withdrawal, before, actor=actor, reason=reason, request_id=request_id)
    return ProfileChange(version, before, withdrawal.removed, stale=version.stale)


def _current_replace(version: ProfileVersion, withdrawal: ProfileWithdrawal, *, actor, reason, request_id):
    """A new approved version right after the current one, without the rejected text (history keeps the old)."""
    _numbers_after_shift(version)
    new = ProfileVersion.objects.create(
        end_user_id=version.end_user_id,
        number=version.number + 1,
        text=withdrawal.text,
        author=ProfileAuthor.SYSTEM,
        review_state=ReviewState.APPROVED,
        stale=withdrawal.needs_rederiving,
        source_segment_id=version.source_segment_id,
    )
    new.source_pages.set(version.source_pages.all())
    if new.stale:
        _rederive_queue(version.end_user_id)
    _withdrawal_audit(new, withdrawal, version.text, actor=actor, reason=reason, request_id=request_id)
    return ProfileChange(new, version.text, withdrawal.removed, stale=new.stale)


def _numbers_after_shift(version: ProfileVersion) -> None:
    """Move the versions numbered after `version` (awaiting review, rejected) up by one, keeping their order; in two
    steps through negative numbers, as the number is unique per user and checked row by row."""
    later = ProfileVersion.objects.filter(end_user_id=version.end_user_id, number__gt=version.number)
    later.update(number=-(F("number") + 1))
    ProfileVersion.objects.filter(end_user_id=version.end_user_id, number__lt=0).update(number=-F("number"))


def _current_mark_stale(version: ProfileVersion, withdrawal: ProfileWithdrawal, *, actor, reason, request_id):
    """The current profile restates a rejected fact in other words: withheld from prompts until re-derived."""
    ProfileVersion.objects.filter(pk=version.pk).update(stale=True)
    version.stale = True
    _rederive_queue(version.end_user_id)
    detail = {"what": "restates a rejected fact in other words", "sentences": len(withdrawal.paraphrased)}
    _audit(version, actor=actor, action="profile.stale", reason=reason, detail=detail, request_id=request_id)
    return ProfileChange(version, version.text, [], stale=True)


def _rederive_queue(end_user_id: int) -> None:
    from memory.tasks import profile_rederive_task

    jobs_due(kind=JobKind.REDERIVE, target_ids=[end_user_id])  # the sweep's record, should the message be lost
    transaction.on_commit(lambda: profile_rederive_task.delay(end_user_id))


def _withdrawal_audit(version, withdrawal: ProfileWithdrawal, before: str, *, actor, reason, request_id) -> None:
    detail = {"removed": len(withdrawal.removed), "paraphrased": len(withdrawal.paraphrased)}
    after = withdrawal.text if withdrawal.changed else None
    replaced = before if withdrawal.changed else None
    _audit(version, actor=actor, action="profile.withdraw", reason=reason, before=replaced, after=after, detail=detail,
           request_id=request_id)  # fmt: skip


def _rejected_facts_strip(version: ProfileVersion, **who) -> ProfileChange | None:
    """Take every rejected fact of the user out of a version being approved (in place, audited)."""
    rejected = KnowledgeEntry.objects.filter(end_user_id=version.end_user_id, review_state=ReviewState.REJECTED)
    facts = list(rejected.values_list("text", flat=True))
    withdrawal = profile_without(version.text, facts) if facts else None
    if withdrawal is None or not (withdrawal.changed or withdrawal.needs_rederiving):
        return None
    return _pending_rewrite(version, withdrawal, **who)


def _source_turns_withhold(entry: KnowledgeEntry, *, actor, reason, request_id) -> tuple[list[Page], list[Page]]:
    """Withhold the unpinned turns the fact was learnt from (audited as page.withhold); pinned ones are kept on
    purpose and stay quoted. Returns (withheld, kept pinned)."""
    pages = list(entry.source_pages.without_vectors().order_by("seq"))
    withheld = [page for page in pages if not page.pinned and not page.withheld]
    Page.objects.filter(pk__in=[page.pk for page in withheld]).update(withheld=True)
    owner = entry.end_user
    for page in withheld:
        page.withheld = True
        audit_record(tenant=owner.tenant_id, actor=actor, action="page.withhold", end_user=owner, target_type="page",
                     target_id=page.pk, reason=reason, detail={"rejected_fact": entry.pk},
                     request_id=request_id)  # fmt: skip
    return withheld, [page for page in pages if page.pinned]


@transaction.atomic
def page_withhold_release(*, page: Page, actor: Actor, reason: str, request_id: str = "") -> bool:
    """ "Use this turn again": a withheld turn may be retrieved and quoted again. Audited as page.use_again.

    Callers check the operator may write memory (supervisor and above). Idempotent: returns whether it changed.
    """
    reason = _reason(reason)
    _item_owner_lock(page)
    if not Page.objects.filter(pk=page.pk, withheld=True).update(withheld=False):
        return False
    page.withheld = False
    _audit(page, actor=actor, action="page.use_again", reason=reason, request_id=request_id)
    return True


# --- Reject and forget the source turns ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RejectionPreview:
    """What rejecting a fact would change, computed without writing: the profile text it withdraws, the turns it
    withholds or keeps (pinned), and what forgetting those turns would do (None when a legal hold forbids it)."""

    profiles: list[tuple[ProfileVersion, ProfileWithdrawal]]
    turns_withheld: list[Page]
    turns_kept_pinned: list[Page]
    forget: ForgetImpact | None
    legal_hold: LegalHold | None  # the hold that forbids forgetting, shown with its date and who placed it

    @property
    def removed_from_profile(self) -> list[str]:
        return list(dict.fromkeys(text for _, withdrawal in self.profiles for text in withdrawal.removed))


def knowledge_reject_preview(*, entry: KnowledgeEntry) -> RejectionPreview:
    """What rejecting `entry` (alone, or with its source turns forgotten) would do. Read-only."""
    pages = list(entry.source_pages.without_vectors().select_related("space__assistant").order_by("seq"))
    held = legal_hold_for_deletion(end_user_id=entry.end_user_id)
    forget = None if held else ForgetImpact()
    if forget is not None and pages:
        forget = plan_pages_forget(end_user=entry.end_user, pages=pages).impact
    return RejectionPreview(
        profiles=profile_withdrawals(end_user_id=entry.end_user_id, facts=[entry.text]),
        turns_withheld=[page for page in pages if not page.pinned],
        turns_kept_pinned=[page for page in pages if page.pinned],
        forget=forget,
        legal_hold=held,
    )


@transaction.atomic
def knowledge_reject_and_forget(
    *, entry: KnowledgeEntry, actor: Actor, reason: str, request_id: str = ""
) -> tuple[KnowledgeEntry, ForgetImpact]:
    """Reject a pending fact and forget the turns it was learnt from, in one step (pinned turns too: the reviewer
    chose to forget them). The forget is memory.services.forgetting's plan, audited as knowledge.reject_forget.

    Raises LegalHoldActive, changing nothing, when the user is under legal hold (reject alone withholds the turns
    instead), and GovernanceError as knowledge_review does.
    """
    legal_hold_check(end_user=entry.end_user, action="forgetting")
    page_ids = list(entry.source_pages.values_list("pk", flat=True))
    decided = _knowledge_decide(entry, REJECT, actor=actor, reason=reason, text=None, request_id=request_id,
                                turns_withheld=False)  # fmt: skip
    if not page_ids:
        return decided, ForgetImpact()
    impact = pages_forget(end_user=entry.end_user, page_ids=page_ids, actor=actor, reason=reason,
                          action="knowledge.reject_forget")  # fmt: skip
    return decided, impact
