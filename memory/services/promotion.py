"""MTM → LPM promotion: profile update and knowledge extraction from hot segments, with FIFO knowledge stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.heat import is_hot, segment_heat
from memory.models import (
    KnowledgeEntry,
    MemorySpace,
    Page,
    PersonalDataAction,
    PersonalDataPolicy,
    ProfileVersion,
    ReviewState,
    Segment,
)
from memory.models.events import EventKind, EventStatus
from memory.models.job_leases import JobKind
from memory.models.tiers import HeatEvent, KnowledgeKind
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor, audit_record
from memory.services.embedding_state import embedder_for_store
from memory.services.events import event_record
from memory.services.heat_samples import heat_sample_record
from memory.services.jobs import job_claim, job_done, job_forget, job_release, job_renew, lease_kept
from memory.services.legal_hold import legal_hold_for_deletion
from memory.services.personal_data import redactor_for, review_state_for, steps_for_prompts
from memory.services.supersession import Supersession, knowledge_supersede
from memory.services.updating import page_turn_text, space_updating_lock
from memory.services.webhook_events import facts_learned, webhook_events_emit
from memory.steps import get_steps
from memory.steps.types import KnownFact, MemorySteps, StepFailed, TurnText
from memory.text import text_hash
from memory.validity import first_slot


@dataclass
class PromotionReport:
    promoted: bool = False
    reason: str = ""
    profile_version_id: int | None = None
    knowledge_ids: list[int] = field(default_factory=list)
    dropped_knowledge_ids: list[int] = field(default_factory=list)
    superseded: list[Supersession] = field(default_factory=list)
    analysed_page_ids: list[int] = field(default_factory=list)


def segment_promote(*, segment_id: int, now: datetime | None = None) -> PromotionReport:
    """Promote a hot segment's unanalysed pages into the profile and knowledge stores.

    Idempotent: a segment that is gone, no longer hot, or has nothing unanalysed is left alone, and only the
    holder of the segment's promotion lease (memory.services.jobs) promotes it. Raises StepFailed
    (after recording a failed event) when a step cannot complete; nothing is stored then.
    """
    now = now or timezone.now()
    space_id = Segment.objects.filter(pk=segment_id).values_list("space_id", flat=True).first()
    if space_id is None:
        job_forget(kind=JobKind.PROMOTION, target_id=segment_id)
        return PromotionReport(reason="segment gone")
    space = MemorySpace.objects.select_related("end_user", "assistant").get(pk=space_id)
    lease = job_claim(kind=JobKind.PROMOTION, target_id=segment_id)
    if lease is None:
        return PromotionReport(reason="another worker is promoting it")  # and runs again after its own run
    steps = steps_for_prompts(get_steps(), tenant=space.tenant_id)  # the model never reads mask-in-prompts data
    try:
        with lease_kept(lambda: job_renew(lease)), transaction.atomic():
            space_updating_lock(space.id)
            report = _promote(space, segment_id, steps, now)
            if job_done(lease):
                transaction.on_commit(lambda: _promotion_rerun(segment_id))
            return report
    except StepFailed as exc:
        job_release(lease)
        event_record(
            space=space,
            kind=EventKind.PROMOTION,
            status=EventStatus.FAILED,
            mode=steps.mode,
            target_type="segment",
            target_id=segment_id,
            usage=steps.usage,
            error=str(exc),
        )
        raise
    except BaseException:
        job_release(lease)  # the sweep queues it again after the back-off
        raise


def _promotion_rerun(segment_id: int) -> None:
    from memory.tasks import segment_promote_task

    segment_promote_task.delay(segment_id)


def _promote(space: MemorySpace, segment_id: int, steps: MemorySteps, now: datetime) -> PromotionReport:
    segment = Segment.objects.filter(pk=segment_id).first()
    if segment is None:
        return PromotionReport(reason="segment gone")
    if not is_hot(segment_heat(segment, now)):
        return PromotionReport(reason="not hot")
    pages = list(segment.pages.filter(analysed=False).order_by("seq"))
    if not pages:
        return PromotionReport(reason="nothing unanalysed")
    turns = [page_turn_text(page) for page in pages]
    report = PromotionReport(promoted=True, analysed_page_ids=[p.id for p in pages])
    policy = personal_data_policy_or_default(tenant=space.tenant_id)
    versions = ProfileVersion.objects.filter(end_user_id=space.end_user_id).order_by("-number")
    current = versions.first()
    known = _known_facts(space)
    if current is not None and current.locked:
        facts = steps.knowledge_extract(pages=turns, known=known)  # the profile stays as it is: ask only for facts
    else:
        # it builds on the newest version a reviewer has not rejected
        base = versions.exclude(review_state=ReviewState.REJECTED).first()
        findings = steps.promotion_analyse(profile=base.text if base else "", pages=turns, known=known)
        report.profile_version_id = _profile_version_add(space, segment, pages, current, base, findings.profile, policy)
        facts = findings.facts
    sources = _fact_sources(steps, pages, turns, [*facts.user, *facts.assistant])
    stored = _knowledge_add(space, segment, sources, facts.user, facts.assistant, policy)
    report.knowledge_ids = list(stored.values())
    named = {stored[text]: old for text, old in facts.replaces.items() if text in stored}
    learned = _entries(report.knowledge_ids)
    events = facts_learned(learned, user=space.end_user.external_id, source="promotion")
    webhook_events_emit(tenant_id=space.tenant_id, events=events)
    report.superseded = knowledge_supersede(entries=learned, named=named)
    report.dropped_knowledge_ids = knowledge_enforce_capacity(space=space)
    Page.objects.filter(id__in=report.analysed_page_ids).update(analysed=True)
    Segment.objects.filter(pk=segment.pk).update(l_interaction=0)
    segment.l_interaction = 0
    heat_sample_record(segment=segment, event=HeatEvent.PROMOTED, now=now)
    event_record(
        space=space,
        kind=EventKind.PROMOTION,
        mode=steps.mode,
        target_type="segment",
        target_id=segment.id,
        detail={
            "analysed_page_ids": report.analysed_page_ids,
            "profile_version_id": report.profile_version_id,
            "knowledge_ids": report.knowledge_ids,
            "dropped_knowledge_ids": report.dropped_knowledge_ids,
            "superseded": [{"id": s.earlier_id, "by": s.later_id, "rule": s.by} for s in report.superseded],
        },
        usage=steps.usage,
    )
    return report


# How many of the user's current facts a model sees, newest first, to say which one a new fact replaces.
KNOWN_FACTS_SHOWN = 40


def _known_facts(space: MemorySpace) -> tuple[KnownFact, ...]:
    """The user's current facts (approved, not replaced), newest first, for the model to name what a fact replaces."""
    rows = (
        KnowledgeEntry.objects.filter(
            end_user_id=space.end_user_id, kind=KnowledgeKind.USER, valid_to__isnull=True,
            review_state=ReviewState.APPROVED,
        )
        .order_by("-valid_from", "-id")
        .values_list("id", "text")[:KNOWN_FACTS_SHOWN]
    )  # fmt: skip
    return tuple(KnownFact(id=fact_id, text=text) for fact_id, text in rows)


def _entries(ids: list[int]) -> list[KnowledgeEntry]:
    return list(KnowledgeEntry.objects.filter(id__in=ids).without_vectors())


def _profile_version_add(
    space: MemorySpace,
    segment: Segment,
    pages: list[Page],
    current: ProfileVersion | None,
    base: ProfileVersion | None,
    text: str,
    policy: PersonalDataPolicy,
) -> int | None:
    """A new profile version holding `text`, unless the text is empty or did not change from `base`.

    The model's text loses the policy's do-not-store data, and the version waits for review when the policy asks
    (memory.services.personal_data.review_state_for).
    """
    text = redactor_for(policy, PersonalDataAction.DO_NOT_STORE)(text.strip())
    if not text or (base is not None and text == base.text):
        return None
    version = ProfileVersion.objects.create(
        end_user_id=space.end_user_id,
        number=(current.number + 1) if current else 1,
        text=text,
        source_segment=segment,
        review_state=review_state_for(policy, text),
    )
    version.source_pages.set(pages)
    return version.id


def _fact_sources(steps: MemorySteps, pages: list[Page], turns: list[TurnText], facts: list[str]) -> dict:
    """The pages each fact was learnt from, so that forgetting one page removes only its own facts.

    Offline the steps are deterministic and free, so each page is asked alone and a fact is linked to the pages
    that yield it; a model's facts (one call for the batch) are linked to every page of the batch.
    """
    if steps.mode != "offline" or len(pages) == 1:
        return {fact.strip(): pages for fact in facts}
    yields = []
    for page, turn in zip(pages, turns, strict=True):
        alone = steps.knowledge_extract(pages=[turn])
        yields.append((page, {*alone.user, *alone.assistant}))
    return {fact.strip(): [page for page, said in yields if fact in said] or pages for fact in facts}


def _knowledge_add(
    space: MemorySpace,
    segment: Segment,
    sources: dict,
    user_facts: list[str],
    assistant_facts: list[str],
    policy: PersonalDataPolicy,
) -> dict[str, int]:
    """Store each new fact once, with its own embedding, a link to the pages it came from, the time it became true
    (its latest source turn's) and the slot it gives a value of (memory.validity); returns text → id, keyed by the
    text as the steps gave it.

    A fact loses the policy's do-not-store data before it is hashed, embedded or stored, and waits for review
    when the policy asks. A fact a reviewer rejected is not stored again (its hash is still there).
    """
    redact = redactor_for(policy, PersonalDataAction.DO_NOT_STORE)
    sources = {redact(fact.strip()): pages for fact, pages in sources.items()}
    said = {redact(f).strip(): f.strip() for f in [*user_facts, *assistant_facts]}  # stored text → as the steps gave it
    user_facts, assistant_facts = [redact(f) for f in user_facts], [redact(f) for f in assistant_facts]
    wanted = [(KnowledgeKind.USER, None, f) for f in user_facts] + [
        (KnowledgeKind.ASSISTANT, space.assistant_id, f) for f in assistant_facts
    ]
    existing = set(
        KnowledgeEntry.objects.filter(end_user_id=space.end_user_id).values_list("kind", "assistant_id", "text_hash")
    )
    fresh = []
    for kind, assistant_id, text in wanted:
        key = (kind, assistant_id, text_hash(text))
        if text.strip() and key not in existing:
            existing.add(key)
            fresh.append((kind, assistant_id, text.strip()))
    if not fresh:
        return {}
    vectors = embedder_for_store().embed([text for _, _, text in fresh])
    ids = {}
    every_page = {p for ps in sources.values() for p in ps}
    for (kind, assistant_id, text), vector in zip(fresh, vectors, strict=True):
        pages = sources.get(text) or every_page
        entry = KnowledgeEntry.objects.create(
            end_user_id=space.end_user_id,
            assistant_id=assistant_id,
            kind=kind,
            text=text,
            text_hash=text_hash(text),
            embedding=vector,
            source_segment=segment,
            review_state=review_state_for(policy, text),
            slot=first_slot(text)[:80] if kind == KnowledgeKind.USER else "",
            valid_from=max(page.at for page in pages),
        )
        entry.source_pages.set(pages)
        ids[said.get(text, text)] = entry.id
    return ids


def knowledge_enforce_capacity(*, space: MemorySpace) -> list[int]:
    """FIFO per store: past capacity, drop the oldest entries that are neither pinned nor locked (audited).

    While the end user is under legal hold nothing is dropped (a `hold_kept` event says so): the stores stay past
    capacity and the first promotion after the hold is released drops down to it.
    """
    dropped = _knowledge_past_capacity(space)
    if not dropped:
        return []
    if legal_hold_for_deletion(end_user_id=space.end_user_id) is not None:
        event_record(space=space, kind=EventKind.HOLD_KEPT, detail={"knowledge_past_capacity": dropped})
        return []
    KnowledgeEntry.objects.filter(id__in=dropped).delete()
    event_record(space=space, kind=EventKind.KNOWLEDGE_DROPPED, detail={"dropped_knowledge_ids": dropped})
    audit_record(
        tenant=space.tenant_id, actor=Actor.system("knowledge capacity"), action="knowledge.drop",
        end_user=space.end_user, target_type="knowledge", reason="a knowledge store past capacity: oldest first",
        detail={"dropped_knowledge_ids": dropped},
    )  # fmt: skip
    return dropped


def _knowledge_past_capacity(space: MemorySpace) -> list[int]:
    """The entries FIFO would drop: per store, the oldest neither pinned nor locked, past capacity."""
    stores = [
        KnowledgeEntry.objects.filter(end_user_id=space.end_user_id, kind=KnowledgeKind.USER),
        KnowledgeEntry.objects.filter(
            end_user_id=space.end_user_id, kind=KnowledgeKind.ASSISTANT, assistant_id=space.assistant_id
        ),
    ]
    dropped: list[int] = []
    for store in stores:
        excess = store.count() - settings.MEMORY_KNOWLEDGE_CAPACITY
        if excess > 0:
            oldest = list(
                store.filter(pinned=False, locked=False).order_by("created_at", "id").values_list("id", flat=True)
            )[:excess]
            dropped.extend(oldest)
    return dropped
