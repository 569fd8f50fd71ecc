"""Governing memory by hand: update (edit, pin, lock), forget and pause. Every change is audited with its reason.

Operators (supervisor and above), end users (their own memory) and API tokens call these; access checks happen
before, in memory.roles and the callers. Forgetting is a hard delete of the item, its embedding and the derived
text that quotes it; its audit entry keeps who, when, why and what kind of item, never the content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from memory.models import (
    ChatReply,
    EndUser,
    IdempotentRequest,
    KnowledgeEntry,
    MemorySpace,
    Page,
    ProfileVersion,
    Segment,
)
from memory.models.tiers import ProfileAuthor
from memory.retrieval import segment_central_summary
from memory.services.audit import Actor, audit_record, audit_tombstone_quoting, audit_tombstone_target
from memory.services.embedding_state import embedder_for_store
from memory.services.promotion import text_hash
from memory.text import split_sentences

MAX_MEMORY_TEXT = 4000
QUOTE_MIN_WORDS = 4


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
    if getattr(item, flag) == value:
        return False
    setattr(item, flag, value)
    type(item).objects.filter(pk=item.pk).update(**{flag: value})
    verb = FLAG_VERBS[flag][0 if value else 1]
    _audit(item, actor=actor, action=f"{item.item_kind}.{verb}", reason=reason, request_id=request_id)
    return True


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
    text = _text(text, "knowledge text")
    before = entry.text
    entry.text, entry.text_hash = text, text_hash(text)
    entry.embedding = embedder_for_store().embed([text])[0]
    entry.save(update_fields=["text", "text_hash", "embedding"])
    _audit(entry, actor=actor, action="knowledge.edit", reason=reason, before=before, after=text, request_id=request_id)


def _segment_summary_set(
    *, segment: Segment, summary: str, keywords: list[str] | None, actor: Actor, reason: str, request_id: str
) -> None:
    """Rewrite a segment's topic summary (and keywords); its embedding is recomputed from the new summary."""
    summary = _text(summary, "summary")
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
    if summary is None and keywords is not None:
        raise GovernanceError("the keywords need the summary they describe")
    who = {"actor": actor, "reason": reason, "request_id": request_id}
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
    who = {"actor": actor, "reason": reason, "request_id": request_id}
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
    return _flags_set(version, {"locked": locked}, actor=actor, reason=reason, request_id=request_id)


@transaction.atomic
def profile_edit(*, end_user: EndUser, text: str, actor: Actor, reason: str, request_id: str = "") -> ProfileVersion:
    """Write a new profile version by hand (the previous versions stay)."""
    text, reason = _text(text, "profile"), _reason(reason)
    current = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()
    author = ProfileAuthor.END_USER if actor.kind == "end_user" else ProfileAuthor.OPERATOR
    version = ProfileVersion.objects.create(
        end_user=end_user, number=(current.number + 1) if current else 1, text=text, author=author
    )
    before = current.text if current else None
    _audit(version, actor=actor, action="profile.edit", reason=reason, before=before, after=text, request_id=request_id)
    return version


# --- Forget -------------------------------------------------------------------------------------------------------


@dataclass
class ForgetReport:
    """What a forget removed, counted by kind (no content)."""

    pages: int = 0
    segments: int = 0
    knowledge: int = 0
    profile_versions: int = 0
    scrubbed_texts: int = 0

    def as_detail(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v}


def _quotes(texts: list[str]) -> list[str]:
    """The sentences of `texts` long enough that finding them elsewhere means they were quoted."""
    return [s for t in texts for s in split_sentences(t) if len(s.split()) >= QUOTE_MIN_WORDS]


def _scrub(space: MemorySpace, quotes: list[str], report: ForgetReport, page_ids: list[int]) -> None:
    """Remove derived text that quotes forgotten pages: facts, profile lines, chain/topic and segment summaries."""
    end_user = space.end_user
    quoting = Q(source_pages__in=page_ids) if page_ids else Q(pk__in=[])
    for quote in quotes:
        quoting |= Q(text__contains=quote)
    fact_ids = set(KnowledgeEntry.objects.filter(Q(end_user=end_user) & quoting).values_list("pk", flat=True))
    report.knowledge += len(fact_ids)
    KnowledgeEntry.objects.filter(pk__in=fact_ids).delete()
    for fact_id in fact_ids:
        audit_tombstone_target(tenant_id=space.tenant_id, target_type=KnowledgeEntry.item_kind, target_id=fact_id)
    if not quotes:
        return
    audit_tombstone_quoting(tenant_id=space.tenant_id, subject_id=end_user.pk, quotes=quotes)
    for version in ProfileVersion.objects.filter(end_user=end_user):
        kept = [line for line in version.text.splitlines() if not any(q in line for q in quotes)]
        if len(kept) != len(version.text.splitlines()):
            ProfileVersion.objects.filter(pk=version.pk).update(text="\n".join(kept) or "(removed)")
            report.scrubbed_texts += 1
    for page in Page.objects.filter(space=space).exclude(pk__in=page_ids):
        fields = {f: "" for f in ("chain_summary", "topic_summary") if any(q in getattr(page, f) for q in quotes)}
        for field in ("user_message", "assistant_reply"):  # later turns that quoted it, e.g. replies from memory
            redacted = _redact(getattr(page, field), quotes)
            if redacted != getattr(page, field):
                fields[field] = redacted
        if fields:
            Page.objects.filter(pk=page.pk).update(**fields)
            report.scrubbed_texts += 1
    for reply in ChatReply.objects.filter(space=space).exclude(page_id__in=page_ids):
        redacted = _redact(reply.user_message, quotes)
        if redacted != reply.user_message:
            ChatReply.objects.filter(pk=reply.pk).update(user_message=redacted)
            report.scrubbed_texts += 1
    stored = IdempotentRequest.objects.filter(end_user=end_user).only("id", "response")
    quoting_responses = [r.pk for r in stored if any(q in json.dumps(r.response) for q in quotes)]
    report.scrubbed_texts += IdempotentRequest.objects.filter(pk__in=quoting_responses).delete()[0]
    for segment in Segment.objects.filter(space=space).only("id", "summary", "embedding"):
        if any(q in segment.summary for q in quotes):
            replacement = _central_summary(segment) or "(summary removed)"
            Segment.objects.filter(pk=segment.pk).update(summary=replacement)
            report.scrubbed_texts += 1


def _redact(text: str, quotes: list[str]) -> str:
    for quote in quotes:
        text = text.replace(quote, "[forgotten]")
    return text


def _central_summary(segment: Segment) -> str | None:
    """The remaining pages' most central topic (or their latest one when they have no topic vectors)."""
    if segment.embedding is not None:
        central = segment_central_summary(segment_id=segment.pk, centroid=segment.embedding)
        if central:
            return central
    remaining = Page.objects.filter(segment=segment).exclude(topic_summary="").order_by("-seq")
    return remaining.values_list("topic_summary", flat=True).first()


@transaction.atomic
def page_forget(*, page: Page, actor: Actor, reason: str, request_id: str = "") -> ForgetReport:
    """Hard-delete a page and the derived text that quotes it; a segment left empty goes too."""
    reason = _reason(reason)
    space, segment_id = page.space, page.segment_id
    report = ForgetReport(pages=1)
    quotes = _quotes([page.user_message, page.assistant_reply])
    audit_tombstone_target(tenant_id=space.tenant_id, target_type=page.item_kind, target_id=page.pk)
    _audit(page, actor=actor, action="page.forget", reason=reason, request_id=request_id)
    _scrub(space, quotes, report, [page.pk])
    page.delete()
    if segment_id and not Page.objects.filter(segment_id=segment_id).exists():
        Segment.objects.filter(pk=segment_id).delete()
        report.segments += 1
    return report


@transaction.atomic
def segment_forget(*, segment: Segment, actor: Actor, reason: str, request_id: str = "") -> ForgetReport:
    """Hard-delete a segment with its pages, heat history and the derived text that quotes them."""
    reason = _reason(reason)
    space = segment.space
    pages = list(Page.objects.filter(segment=segment).values_list("id", "user_message", "assistant_reply"))
    report = ForgetReport(pages=len(pages), segments=1)
    audit_tombstone_target(tenant_id=space.tenant_id, target_type=segment.item_kind, target_id=segment.pk)
    _audit(segment, actor=actor, action="segment.forget", reason=reason, request_id=request_id)
    quotes = _quotes([t for _, u, a in pages for t in (u, a)] + [segment.summary])
    _scrub(space, quotes, report, [pid for pid, _, _ in pages])
    segment.delete()
    return report


@transaction.atomic
def knowledge_forget(*, entry: KnowledgeEntry, actor: Actor, reason: str, request_id: str = "") -> ForgetReport:
    reason = _reason(reason)
    audit_tombstone_target(tenant_id=entry.end_user.tenant_id, target_type=entry.item_kind, target_id=entry.pk)
    _audit(entry, actor=actor, action="knowledge.forget", reason=reason, request_id=request_id)
    entry.delete()
    return ForgetReport(knowledge=1)


@transaction.atomic
def profile_version_forget(*, version: ProfileVersion, actor: Actor, reason: str, request_id: str = "") -> ForgetReport:
    """Delete one profile version; if it was the current one, the previous version becomes current."""
    reason = _reason(reason)
    audit_tombstone_target(tenant_id=version.end_user.tenant_id, target_type=version.item_kind, target_id=version.pk)
    _audit(version, actor=actor, action="profile_version.forget", reason=reason, request_id=request_id)
    version.delete()
    return ForgetReport(profile_versions=1)


# --- Pause and reads ----------------------------------------------------------------------------------------------


@transaction.atomic
def memory_pause_set(*, space: MemorySpace, paused: bool, actor: Actor, reason: str, request_id: str = "") -> bool:
    """Pause (turns still answered, nothing kept beyond STM) or resume memory for one user and assistant."""
    reason = _reason(reason)
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


def reply_memory_record(*, space: MemorySpace, used: dict, actor: Actor, request_id: str = "") -> None:
    """Audit the memory injected into one reply (ids and scores from the retrieval result)."""
    audit_record(
        tenant=space.tenant_id,
        actor=actor,
        action="reply.memory_injected",
        end_user=space.end_user,
        target_type="memoryspace",
        target_id=space.pk,
        detail=used,
        request_id=request_id,
    )
