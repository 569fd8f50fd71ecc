"""Governing memory by hand: update (edit, pin, lock), forget and pause. Every change is audited with its reason.

Operators (supervisor and above), end users (their own memory) and API tokens call these; access checks happen
before, in memory.roles and the callers. Forgetting is a hard delete of the item, what was derived from it and the
copies of what the user said in it (memory.services.forgetting); its audit entry keeps who, when, why, what kind of
item and the impact counts, never the content. A corrected fact reaches the profile.
"""

from __future__ import annotations

from typing import TypedDict

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction

from memory.models import (
    EndUser,
    KnowledgeEntry,
    MemorySpace,
    Page,
    PersonalDataPolicy,
    ProfileVersion,
    Segment,
)
from memory.models.tiers import KnowledgeKind, ProfileAuthor
from memory.selectors.forgetting import (
    ForgetImpact,
    plan_knowledge_forget,
    plan_pages_forget,
    plan_profile_version_forget,
)
from memory.services.audit import Actor, audit_record, audit_record_many
from memory.services.embedding_state import embedder_for_store
from memory.services.forgetting import plan_apply, profile_fact_revise
from memory.services.legal_hold import legal_hold_check
from memory.services.personal_data import storage_redactor, text_for_storage
from memory.services.promotion import text_hash
from memory.services.turns import EndUserClosed, end_user_write_lock

MAX_MEMORY_TEXT = 4000


class GovernanceError(ValueError):
    """The change cannot be made as asked; the message says why."""


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise GovernanceError("a reason is required")
    if len(reason) > 500:
        raise GovernanceError("the reason is longer than 500 characters")
    return reason


def _text(text: str, what: str) -> str:
    text = (text or "").strip()
    if not text:
        raise GovernanceError(f"the {what} is empty")
    if len(text) > MAX_MEMORY_TEXT:
        raise GovernanceError(f"the {what} is longer than {MAX_MEMORY_TEXT} characters")
    if "\x00" in text:
        raise GovernanceError(f"the {what} contains a NUL character")
    return text


def _audit(item, *, actor: Actor, action: str, reason: str, before=None, after=None, detail=None, request_id=""):
    owner = item.end_user
    return audit_record(
        tenant=owner.tenant_id,
        actor=actor,
        action=action,
        end_user=owner,
        target_type=item.item_kind,
        target_id=item.pk,
        reason=reason,
        before=before,
        after=after,
        detail=detail,
        request_id=request_id,
    )


# --- Update: edit, pin and lock ---------------------------------------------------------------------------------

FLAG_VERBS = {"pinned": ("pin", "unpin"), "locked": ("lock", "unlock")}  # a flag's audit verbs when set, cleared


def _owner_lock(end_user: EndUser) -> None:
    """The per-user write lock erasure waits for: a change either commits before an erasure deletes the user's
    memory or is refused (EndUserClosed) once the user is gone. A deactivated user's memory may still be governed."""
    end_user_write_lock(end_user, inactive_ok=True)


def _item_owner_lock(item) -> None:
    """The write lock of the item's owner; EndUserClosed when its space or owner is already gone (erased)."""
    try:
        owner = item.end_user
    except ObjectDoesNotExist:
        raise EndUserClosed(erased=True) from None
    _owner_lock(owner)


def _forget_lock(item) -> None:
    """The owner's write lock, then the legal hold check: a user under hold keeps everything (LegalHoldActive)."""
    _item_owner_lock(item)
    legal_hold_check(end_user=item.end_user, action="forgetting")


def _has_flag(item, flag: str) -> bool:
    """Whether the item's model has the flag: a page has no lock, a profile version no pin."""
    return flag in FLAG_VERBS and any(field.name == flag for field in item._meta.concrete_fields)


@transaction.atomic
def memory_flag_set(*, item, flag: str, value: bool, actor: Actor, reason: str, request_id: str = "") -> bool:
    """Pin or lock (or unpin/unlock) an item. Returns whether anything changed; an unchanged flag is not audited.

    Pinned: always retrieved for this user, never evicted or dropped. Locked: automatic updating never rewrites or
    drops it.
    """
    if not _has_flag(item, flag):
        raise GovernanceError(f"a {type(item).__name__} cannot be {flag}")
    reason = _reason(reason)
    _item_owner_lock(item)
    if getattr(item, flag) == value:
        return False
    setattr(item, flag, value)
    type(item).objects.filter(pk=item.pk).update(**{flag: value})
    verb = FLAG_VERBS[flag][0 if value else 1]
    _audit(item, actor=actor, action=f"{item.item_kind}.{verb}", reason=reason, request_id=request_id)
    return True


class _Who(TypedDict):
    """Who changes an item and why: the same for each change of one update, and for its audit entry."""

    actor: Actor
    reason: str
    request_id: str


def _flags_set(item, flags: dict[str, bool | None], *, actor: Actor, reason: str, request_id: str) -> bool:
    """Set each flag given a value (None: leave it); returns whether any changed."""
    changed = False
    for flag, value in flags.items():
        if value is not None:
            changed |= memory_flag_set(
                item=item, flag=flag, value=value, actor=actor, reason=reason, request_id=request_id
            )
    return changed


def _knowledge_text_set(*, entry: KnowledgeEntry, text: str, actor: Actor, reason: str, request_id: str) -> None:
    """Correct a knowledge entry; its embedding is recomputed."""
    text = text_for_storage(tenant=entry.end_user.tenant_id, text=_text(text, "knowledge text"))
    store = KnowledgeEntry.objects.filter(end_user_id=entry.end_user_id, kind=entry.kind, assistant=entry.assistant)
    if store.filter(text_hash=text_hash(text)).exclude(pk=entry.pk).exists():
        raise GovernanceError("that text is already another fact: forget this one instead")
    before = entry.text
    entry.text, entry.text_hash = text, text_hash(text)
    entry.embedding = embedder_for_store().embed([text])[0]
    entry.save(update_fields=["text", "text_hash", "embedding"])
    _audit(entry, actor=actor, action="knowledge.edit", reason=reason, before=before, after=text, request_id=request_id)
    if entry.kind == KnowledgeKind.USER:
        profile_fact_revise(end_user=entry.end_user, before=before, after=text)


def _segment_summary_set(
    *, segment: Segment, summary: str, keywords: list[str] | None, actor: Actor, reason: str, request_id: str
) -> None:
    """Rewrite a segment's topic summary (and keywords); its embedding is recomputed from the new summary."""
    redact = storage_redactor(tenant=segment.space.tenant_id)
    summary = redact(_text(summary, "summary"))
    keywords = None if keywords is None else [k for k in keywords if redact(k) == k]
    before = {"summary": segment.summary, "keywords": segment.keywords}
    segment.summary = summary
    if keywords is not None:
        segment.keywords = [k.strip().lower()[:64] for k in keywords if k.strip()][:8]
    segment.embedding = embedder_for_store().embed([summary])[0]
    segment.save(update_fields=["summary", "keywords", "embedding", "updated_at"])
    after = {"summary": segment.summary, "keywords": segment.keywords}
    _audit(
        segment, actor=actor, action="segment.edit", reason=reason, before=before, after=after, request_id=request_id
    )


@transaction.atomic
def page_update(*, page: Page, pinned: bool | None = None, actor: Actor, reason: str, request_id: str = "") -> bool:
    """Pin or unpin a page (its text is what was said: never edited). Returns whether anything changed."""
    reason = _reason(reason)
    _item_owner_lock(page)
    return _flags_set(page, {"pinned": pinned}, actor=actor, reason=reason, request_id=request_id)


@transaction.atomic
def segment_update(
    *,
    segment: Segment,
    summary: str | None = None,
    keywords: list[str] | None = None,
    pinned: bool | None = None,
    locked: bool | None = None,
    actor: Actor,
    reason: str,
    request_id: str = "",
) -> bool:
    """Rewrite a segment's summary (keywords only with the summary they describe), pin or lock it, all or nothing.

    Each change is audited (the edit first); an unchanged flag is not. Returns whether anything changed.
    """
    reason = _reason(reason)
    _item_owner_lock(segment)
    if summary is None and keywords is not None:
        raise GovernanceError("the keywords need the summary they describe")
    who: _Who = {"actor": actor, "reason": reason, "request_id": request_id}
    if summary is not None:
        _segment_summary_set(segment=segment, summary=summary, keywords=keywords, **who)
    flagged = _flags_set(segment, {"pinned": pinned, "locked": locked}, **who)
    return summary is not None or flagged


@transaction.atomic
def knowledge_update(
    *,
    entry: KnowledgeEntry,
    text: str | None = None,
    pinned: bool | None = None,
    locked: bool | None = None,
    actor: Actor,
    reason: str,
    request_id: str = "",
) -> bool:
    """Correct a knowledge entry's text (re-embedded), pin or lock it, all or nothing; each change audited."""
    reason = _reason(reason)
    _item_owner_lock(entry)
    who: _Who = {"actor": actor, "reason": reason, "request_id": request_id}
    if text is not None:
        _knowledge_text_set(entry=entry, text=text, **who)
    flagged = _flags_set(entry, {"pinned": pinned, "locked": locked}, **who)
    return text is not None or flagged


@transaction.atomic
def profile_version_update(
    *, version: ProfileVersion, locked: bool | None = None, actor: Actor, reason: str, request_id: str = ""
) -> bool:
    """Lock or unlock a profile version (a new text is a new version: profile_edit). Returns whether it changed."""
    reason = _reason(reason)
    _item_owner_lock(version)
    return _flags_set(version, {"locked": locked}, actor=actor, reason=reason, request_id=request_id)


@transaction.atomic
def profile_edit(*, end_user: EndUser, text: str, actor: Actor, reason: str, request_id: str = "") -> ProfileVersion:
    """Write a new profile version by hand (the previous versions stay)."""
    text, reason = text_for_storage(tenant=end_user.tenant_id, text=_text(text, "profile")), _reason(reason)
    _owner_lock(end_user)
    current = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()
    author = ProfileAuthor.END_USER if actor.kind == "end_user" else ProfileAuthor.OPERATOR
    version = ProfileVersion.objects.create(
        end_user=end_user, number=(current.number + 1) if current else 1, text=text, author=author
    )
    before = current.text if current else None
    _audit(version, actor=actor, action="profile.edit", reason=reason, before=before, after=text, request_id=request_id)
    return version


# --- Forget -------------------------------------------------------------------------------------------------------
# Planning and applying live in memory.services.forgetting; these services check the reason and hold the transaction.


@transaction.atomic
def page_forget(*, page: Page, actor: Actor, reason: str, request_id: str = "") -> ForgetImpact:
    """Hard-delete a page, what was derived from it and copies of what the user said in it (see forgetting)."""
    reason = _reason(reason)
    _forget_lock(page)
    plan = plan_pages_forget(end_user=page.end_user, pages=[page])
    return plan_apply(plan, item=page, actor=actor, reason=reason, request_id=request_id)


@transaction.atomic
def pages_forget(*, end_user: EndUser, page_ids: list[int], actor: Actor, reason: str, action: str) -> ForgetImpact:
    """Hard-delete several pages of one end user in one plan (retention), as page_forget does for one; pages gone
    meanwhile are skipped. One audit entry, `action`, with the impact counts."""
    reason = _reason(reason)
    _owner_lock(end_user)
    legal_hold_check(end_user=end_user, action="forgetting")
    pages = list(Page.objects.filter(pk__in=page_ids, space__end_user=end_user).order_by("seq").without_vectors())
    if not pages:
        return ForgetImpact()
    plan = plan_pages_forget(end_user=end_user, pages=pages)
    return plan_apply(plan, item=None, actor=actor, reason=reason, request_id="", action=action)


@transaction.atomic
def segment_forget(*, segment: Segment, actor: Actor, reason: str, request_id: str = "") -> ForgetImpact:
    """Hard-delete a segment with its pages and heat history, and what was derived from them."""
    reason = _reason(reason)
    _forget_lock(segment)
    pages = list(Page.objects.filter(segment=segment).order_by("seq").without_vectors())
    plan = plan_pages_forget(end_user=segment.end_user, pages=pages, segment=segment)
    return plan_apply(plan, item=segment, actor=actor, reason=reason, request_id=request_id)


@transaction.atomic
def knowledge_forget(*, entry: KnowledgeEntry, actor: Actor, reason: str, request_id: str = "") -> ForgetImpact:
    """Hard-delete a fact; the profile lines stating it are re-derived (with a model: by the worker)."""
    reason = _reason(reason)
    _forget_lock(entry)
    plan = plan_knowledge_forget(entry=entry)
    return plan_apply(plan, item=entry, actor=actor, reason=reason, request_id=request_id)


@transaction.atomic
def profile_version_forget(*, version: ProfileVersion, actor: Actor, reason: str, request_id: str = "") -> ForgetImpact:
    """Delete one profile version; if it was the current one, the previous version becomes current."""
    reason = _reason(reason)
    _forget_lock(version)
    plan = plan_profile_version_forget(version=version)
    return plan_apply(plan, item=version, actor=actor, reason=reason, request_id=request_id)


# --- Pause and reads ----------------------------------------------------------------------------------------------


@transaction.atomic
def memory_pause_set(*, space: MemorySpace, paused: bool, actor: Actor, reason: str, request_id: str = "") -> bool:
    """Pause (turns still answered, nothing kept beyond STM) or resume memory for one user and assistant."""
    reason = _reason(reason)
    _item_owner_lock(space)
    changed = MemorySpace.objects.filter(pk=space.pk).exclude(paused=paused).update(paused=paused) == 1
    space.paused = paused
    if changed:
        audit_record(
            tenant=space.tenant_id,
            actor=actor,
            action="memory.pause" if paused else "memory.resume",
            end_user=space.end_user,
            target_type="memoryspace",
            target_id=space.pk,
            reason=reason,
            request_id=request_id,
        )
    return changed


def memory_read_record(
    *, actor: Actor, end_user: EndUser, what: str, target_type: str = "", target_id=None, request_id=""
) -> None:
    """Audit that someone read a user's memory (operators' reads, exports, context previews)."""
    audit_record(
        tenant=end_user.tenant_id,
        actor=actor,
        action="memory.read",
        end_user=end_user,
        target_type=target_type,
        target_id=target_id,
        detail={"what": what},
        request_id=request_id,
    )


def memory_reads_record(*, actor: Actor, tenant_id: int, end_user_ids: list[int], what: str, request_id="") -> None:
    """Audit one read of several users' memory (an API list): one `memory.read` entry per user, in a constant
    number of queries."""
    audit_record_many(
        tenant_id=tenant_id, actor=actor, action="memory.read", end_user_ids=end_user_ids, detail={"what": what},
        request_id=request_id,
    )  # fmt: skip


def memory_search_record(*, actor: Actor, tenant_id: int, end_user_ids: list[int], what: str, request_id="") -> None:
    """Audit a search across a tenant's users as a read: one `memory.read` entry per user whose memory it showed,
    or one entry about no user when it showed none (the search itself is still on record)."""
    if end_user_ids:
        memory_reads_record(
            actor=actor, tenant_id=tenant_id, end_user_ids=end_user_ids, what=what, request_id=request_id
        )
        return
    audit_record(tenant=tenant_id, actor=actor, action="memory.read", detail={"what": what}, request_id=request_id)


def reply_memory_record(
    *, space: MemorySpace, used: dict, actor: Actor, request_id: str = "", policy: PersonalDataPolicy | None = None
) -> None:
    """Audit the memory injected into one reply (ids and scores from the retrieval result); `policy` is the tenant's
    personal data policy when the caller has read it (audit_record)."""
    audit_record(
        tenant=space.tenant_id,
        actor=actor,
        action="reply.memory_injected",
        end_user=space.end_user,
        target_type="memoryspace",
        target_id=space.pk,
        detail=used,
        request_id=request_id,
        policy=policy,
    )
