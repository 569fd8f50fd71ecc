"""STM → MTM updating: dialogue chains, topic segments, heat samples, eviction past MTM capacity.

Everything one call does happens in one transaction under the space's updating lock, LLM calls included, so a
failure half-way (LLM down, garbage answer, worker killed) leaves memory as it was and the work retryable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Max, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from memory.embeddings import cosine
from memory.heat import f_score, heat_of, joins_segment
from memory.models import MemorySpace, Page, Segment
from memory.models.events import EventKind, EventStatus
from memory.models.job_leases import JobKind
from memory.models.tiers import HeatEvent, Tier
from memory.retrieval.placement import segment_candidates, segment_central_summary
from memory.selectors.heat import hot_segment_ids
from memory.services.audit import Actor, audit_record
from memory.services.embedding_state import embedder_for_store
from memory.services.events import event_record
from memory.services.heat_samples import heat_sample_record
from memory.services.jobs import job_claim, job_done, job_release, job_renew, jobs_due, lease_kept
from memory.services.legal_hold import legal_hold_for_deletion
from memory.services.passages import page_passages_set, page_vectors_embed
from memory.services.personal_data import steps_for_prompts
from memory.services.visits import segment_visits_apply
from memory.steps import get_steps
from memory.steps.types import ChainTopic, MemorySteps, StepFailed, TurnText

SEGMENT_KEYWORDS = 8
UPDATING_LOCK_NAMESPACE = 0x4D4F53  # "MOS": keeps our advisory locks apart from anyone else's


@dataclass
class PlacementReport:
    """What one overflow run did."""

    placed_page_ids: list[int] = field(default_factory=list)
    created_segment_ids: list[int] = field(default_factory=list)
    evicted_segment_ids: list[int] = field(default_factory=list)
    hot_segment_ids: list[int] = field(default_factory=list)


def space_updating_lock(space_id: int) -> None:
    """Serialise updating of one space until the transaction ends (turn recording is not blocked)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [UPDATING_LOCK_NAMESPACE, space_id % 2_147_483_647])


def pages_place(*, page_id: int, now: datetime | None = None) -> PlacementReport:
    """Place every pending evicted page of the page's space, up to and including `page_id`, into segments.

    Idempotent: pages already placed are skipped, and a page deleted in the meantime makes this return quietly.
    Claims the space's placement lease first (memory.services.jobs): while another worker holds it, this returns
    at once and that worker runs again after its own run, so no page is placed twice and none is left behind.
    Raises StepFailed (after recording a failed event) when a memory step cannot complete; nothing is stored then.
    """
    row = Page.objects.filter(pk=page_id).values("space_id", "seq").first()
    if row is None:
        return PlacementReport()
    space = MemorySpace.objects.get(pk=row["space_id"])
    lease = job_claim(kind=JobKind.PLACEMENT, target_id=space.id)
    if lease is None:
        return PlacementReport()  # another worker is placing this space; it was asked to run again for this page
    steps = steps_for_prompts(get_steps(), tenant=space.tenant_id)  # the model never reads mask-in-prompts data
    try:
        with lease_kept(lambda: job_renew(lease)), transaction.atomic():
            space_updating_lock(space.id)
            report = _place_pending(space, row["seq"], steps, now or timezone.now())
            if job_done(lease):
                transaction.on_commit(lambda: _placement_rerun(space.id))
    except StepFailed as exc:
        job_release(lease)
        event_record(
            space=space,
            kind=EventKind.STM_OVERFLOW,
            status=EventStatus.FAILED,
            mode=steps.mode,
            target_type="page",
            target_id=page_id,
            usage=steps.usage,
            error=str(exc),
        )
        raise
    except BaseException:
        job_release(lease)  # the sweep queues it again after the back-off
        raise
    return report


def space_pending_place(*, space_id: int, now: datetime | None = None) -> PlacementReport:
    """Place every page of the space still waiting for placement now, batch or not (imports, replays, tests).

    Idempotent, like `pages_place`: with nothing pending it does nothing.
    """
    newest = Page.objects.waiting_placement().filter(space_id=space_id).aggregate(Max("id"))
    if newest["id__max"] is None:
        return PlacementReport()
    return pages_place(page_id=newest["id__max"], now=now)


def _place_pending(space: MemorySpace, up_to_seq: int, steps: MemorySteps, now: datetime) -> PlacementReport:
    """Place the pending pages with one embedding pass and one chain step for all of them, then check what changed.

    Only the segments this run created can push the space past capacity, and only the segments it touched gained
    L_interaction, so eviction and the hot check look at those alone (visits heat segments too: whoever records
    them checks those with `segments_promote_hot`).
    """
    pending = list(Page.objects.waiting_placement().filter(space=space, seq__lte=up_to_seq).order_by("seq"))
    report = PlacementReport()
    if not pending:
        return report
    embedder = embedder_for_store()
    vectors = page_vectors_embed(embedder=embedder, texts=[p.memory_text for p in pending])
    for page, embedded in zip(pending, vectors, strict=True):
        page.embedding = embedded.vector
    page_passages_set(pages=pending, vectors=vectors, replace=False)
    previous = (
        Page.objects.filter(space=space, tier=Tier.MID_TERM, segment__isnull=False, seq__lt=pending[0].seq)
        .order_by("-seq")
        .first()
    )
    chains = steps.chain_and_topics(
        previous=page_turn_text(previous) if previous else None,
        previous_chain_summary=previous.chain_summary if previous else "",
        pages=[page_turn_text(page) for page in pending],
        similarities=_similarities(previous, pending),
    )
    for page, vector in zip(pending, _topic_vectors(embedder, steps, pending, chains), strict=True):
        page.topic_embedding = vector
    touched: list[int] = []
    for page, chain in zip(pending, chains, strict=True):
        _chain_link(page, previous, chain)
        segment, created = _segment_assign(space, page, chain, now)
        report.placed_page_ids.append(page.id)
        touched.append(segment.id)
        if created:
            report.created_segment_ids.append(segment.id)
        previous = page
    _chain_summaries_spread(pending)
    event_record(
        space=space,
        kind=EventKind.STM_OVERFLOW,
        mode=steps.mode,
        target_type="page",
        target_id=pending[-1].id,
        detail={"placed_page_ids": report.placed_page_ids, "created_segment_ids": report.created_segment_ids},
        usage=steps.usage,
    )
    if report.created_segment_ids:
        report.evicted_segment_ids = segments_evict_past_capacity(space=space, now=now)
    gone = set(report.evicted_segment_ids)
    report.hot_segment_ids = segments_promote_hot(
        space_id=space.id, segment_ids=[i for i in touched if i not in gone], now=now
    )
    return report


def _similarities(previous: Page | None, pending: list[Page]) -> list[float | None]:
    """The cosine of each pending page to the page before it (None for the first without a previous page)."""
    before = [previous, *pending[:-1]]
    return [cosine(b.embedding, p.embedding) if b is not None else None for b, p in zip(before, pending, strict=True)]


def _topic_vectors(
    embedder, steps: MemorySteps, pages: list[Page], chains: list[ChainTopic]
) -> list[np.ndarray | None]:
    """The vectors F compares with segment summaries, as stored: None for the page's own vector
    (MEMORY_TOPIC_VECTOR=page, the default; `Page.topic_vector` reads it), so no vector is stored twice.

    With MEMORY_TOPIC_VECTOR=summary, the model's abstractive topic summaries, embedded in one batch; offline always
    the page, because one extracted sentence is a noisier summary than the page itself (on LoCoMo conv-26 it halves
    the topical separation of segments). The page vector costs no second embedding pass per page.
    """
    vectors: list[np.ndarray | None] = [None] * len(pages)
    if settings.MEMORY_TOPIC_VECTOR != "summary" or steps.mode == "offline":
        return vectors
    wanted = [i for i, chain in enumerate(chains) if chain.topic_summary]
    for i, vector in zip(wanted, embedder.embed([chains[i].topic_summary for i in wanted]), strict=True):
        vectors[i] = vector
    return vectors


def page_turn_text(page: Page) -> TurnText:
    """The page as the memory steps read it: a reply the system wrote without a model is left out."""
    return TurnText(user_message=page.user_message, assistant_reply=page.memory_reply, at=page.at)


def _chain_link(page: Page, previous: Page | None, chain: ChainTopic) -> None:
    """Continue the previous page's chain or start a new one (`_chain_summaries_spread` updates the older members)."""
    page.topic_summary = chain.topic_summary
    page.keywords = list(chain.keywords)
    page.chain_summary = chain.chain_summary
    if chain.continues and previous is not None:
        page.prev_page = previous
        page.chain_head_id = previous.chain_head_id or previous.id
    else:
        page.prev_page = None
        page.chain_head_id = page.id


def _chain_summaries_spread(pages: list[Page]) -> None:
    """Every member of a chain these pages continued shows its latest summary: one UPDATE per chain, not per page."""
    latest = {page.chain_head_id: page.chain_summary for page in pages if page.prev_page_id is not None}
    for head_id, summary in latest.items():
        Page.objects.filter(chain_head_id=head_id).exclude(chain_summary=summary).update(chain_summary=summary)


def _segment_assign(space: MemorySpace, page: Page, chain: ChainTopic, now: datetime) -> tuple[Segment, bool]:
    """Join the best segment by F = cos + Jaccard when F ≥ θ; otherwise start a new segment."""
    touched = min(page.at, now)
    best, best_f = None, -1.0
    for candidate in segment_candidates(space_id=space.id, vector=page.topic_vector):
        f = f_score(candidate.cosine, candidate.keywords, chain.keywords)
        if f > best_f:
            best, best_f = candidate, f
    if best is not None and joins_segment(best_f):
        segment = Segment.objects.select_for_update().get(pk=best.segment_id)  # visits wait for the sample
        _page_save(page, segment)
        _segment_merge(segment, page, touched)
        return segment, False
    segment = Segment.objects.create(
        space=space,
        summary=chain.topic_summary or page.user_message[:200],
        keywords=list(chain.keywords)[:SEGMENT_KEYWORDS],
        embedding=page.topic_vector,
        l_interaction=1,
        last_touched_at=touched,
    )
    _page_save(page, segment)
    heat_sample_record(segment=segment, event=HeatEvent.CREATED, now=touched)
    return segment, True


def _page_save(page: Page, segment: Segment) -> None:
    page.segment = segment
    page.save(
        update_fields=[
            "segment",
            "embedding",
            "topic_embedding",
            "topic_summary",
            "keywords",
            "chain_summary",
            "prev_page",
            "chain_head",
        ]
    )


def _segment_merge(segment: Segment, page: Page, touched: datetime) -> None:
    """L_interaction grows by one page; unless locked, the summary, keywords and centroid are refreshed.

    The segment row is locked (select_for_update), so the counters sampled here are the ones stored: one UPDATE
    writes them all.
    """
    segment.l_interaction += 1
    segment.last_touched_at = max(segment.last_touched_at, touched)
    fields = {
        "l_interaction": F("l_interaction") + 1,
        "last_touched_at": Greatest(F("last_touched_at"), Value(touched)),
    }
    if not segment.locked:
        fields.update(_segment_refresh(segment, page))
    Segment.objects.filter(pk=segment.pk).update(**fields)
    heat_sample_record(segment=segment, event=HeatEvent.MERGED, now=touched)


# How often a large segment's summary and keywords are looked at again: at every page while it holds fewer than
# twice this many, then this many times each time its size doubles (every 2^k pages for 2^k ≤ n / REFRESHES < 2^k+1).
# Reading them costs O(n) for n pages, so each page costs O(REFRESHES) amortised, whatever the segment's size; a large
# segment's centroid moves by about 1/n per page, so its most central page and its top keywords change slowly.
SEGMENT_REFRESHES = 16

# The member count and, when a refresh is due, the members' keywords by frequency, ties in the order they were first
# said (page order, then position in the page), as Counter.most_common over the pages in seq order gives them.
SEGMENT_KEYWORDS_SQL = """
WITH members AS (SELECT count(*) AS n FROM {page} WHERE segment_id = %(segment)s)
SELECT members.n,
       CASE WHEN members.n
                 %% power(2, floor(log(2, greatest(members.n, %(refreshes)s) / %(refreshes)s::numeric)))::bigint = 0
       THEN
       ARRAY(SELECT keyword FROM (
                 SELECT k.keyword, count(*) AS n, min(p.seq::bigint * 1000 + k.position) AS first_said
                 FROM {page} p CROSS JOIN LATERAL unnest(p.keywords) WITH ORDINALITY AS k(keyword, position)
                 WHERE p.segment_id = %(segment)s
                 GROUP BY k.keyword) counted
             ORDER BY n DESC, first_said
             LIMIT %(limit)s)
       END
FROM members
"""


def _segment_refresh(segment: Segment, page: Page) -> dict:
    """The new centroid, and when due the keywords and summary, of a segment `page` has just joined, as fields.

    A running centroid of the members' topic vectors (from the stored one and the new page's vector, not from every
    member); the summary is the most central member's topic; the keywords the members' most frequent. Both are
    looked at again at every page of a small segment and SEGMENT_REFRESHES times per doubling of a large one.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            SEGMENT_KEYWORDS_SQL.format(page=connection.ops.quote_name(Page._meta.db_table)),
            {"segment": segment.pk, "limit": SEGMENT_KEYWORDS, "refreshes": SEGMENT_REFRESHES},
        )
        members, keywords = cursor.fetchone()
    earlier = members - 1
    if segment.embedding is None or earlier <= 0:
        centroid = np.asarray(page.topic_vector, dtype=np.float32)
    else:
        centroid = np.asarray(segment.embedding, dtype=np.float32) * earlier + page.topic_vector
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    segment.embedding = centroid
    if keywords is None:  # not due: the summary and keywords stay as they are
        return {"embedding": centroid}
    summary = segment_central_summary(segment_id=segment.id, centroid=centroid) or segment.summary
    segment.keywords, segment.summary = list(keywords), summary
    return {"embedding": centroid, "keywords": list(keywords), "summary": summary}


def segments_evict_past_capacity(*, space: MemorySpace, now: datetime) -> list[int]:
    """While the space holds more than MTM capacity segments, evict the unpinned one with the lowest heat.

    One count when the space is within capacity; the segments' counters are read only when it is not. While the
    end user is under legal hold nothing is evicted (a `hold_kept` event says so): the space stays past capacity
    and the first placement after the hold is released evicts down to it. Each eviction is audited.
    """
    segments = Segment.objects.filter(space=space)
    if segments.count() <= settings.MEMORY_MTM_CAPACITY:
        return []
    if legal_hold_for_deletion(end_user_id=space.end_user_id) is not None:
        event_record(space=space, kind=EventKind.HOLD_KEPT, detail={"segments_past_capacity": segments.count()})
        return []
    rows = list(segments.values("id", "n_visit", "l_interaction", "last_touched_at", "pinned"))
    excess = len(rows) - settings.MEMORY_MTM_CAPACITY

    def heat_key(row: dict) -> tuple[float, int]:
        counters = {k: row[k] for k in ("n_visit", "l_interaction", "last_touched_at")}
        return (heat_of(**counters, now=now).value, row["id"])

    coldest = sorted((r for r in rows if not r["pinned"]), key=heat_key)[:excess]
    for row in coldest:
        segment_evict(segment_id=row["id"], heat=heat_key(row)[0], space=space)
    return [row["id"] for row in coldest]


def segment_evict(*, segment_id: int, heat: float, space: MemorySpace) -> None:
    """Remove a segment with its pages and heat history, recording what was removed (not the content): an event
    and an audit entry. The caller checked the legal hold (`segments_evict_past_capacity`)."""
    page_ids = list(Page.objects.filter(segment_id=segment_id).values_list("id", flat=True))
    Segment.objects.filter(pk=segment_id).delete()
    detail = {"heat": round(heat, 4), "removed_page_ids": page_ids, "removed_pages": len(page_ids)}
    event_record(space=space, kind=EventKind.EVICTION, target_type="segment", target_id=segment_id, detail=detail)
    audit_record(
        tenant=space.tenant_id, actor=Actor.system("mid-term capacity"), action="segment.evict",
        end_user=space.end_user, target_type="segment", target_id=segment_id,
        reason="mid-term memory past capacity: the coldest unpinned segment leaves", detail=detail,
    )  # fmt: skip


def segments_promote_hot(*, space_id: int, segment_ids: Iterable[int], now: datetime) -> list[int]:
    """Queue a promotion for each of these segments that is hot and holds unanalysed pages; returns their ids.

    For callers whose work heated some segments (placement, recorded visits): only those are read. Idempotent:
    a promotion queued twice promotes once (memory.services.promotion).
    """
    hot = hot_segment_ids(space_id=space_id, now=now, segment_ids=segment_ids)
    _queue_promotions(hot)
    return hot


def segment_visits_count(*, now: datetime | None = None) -> int:
    """Count the segment visits retrieval queued, then queue a promotion for each visited segment that visits
    made hot (placement only reads the segments it touched). Returns the number of visits counted."""
    visited: dict[int, set[int]] = {}
    counted = segment_visits_apply(visited=visited)
    now = now or timezone.now()
    for space_id, segment_ids in sorted(visited.items()):
        with transaction.atomic():
            segments_promote_hot(space_id=space_id, segment_ids=sorted(segment_ids), now=now)
    return counted


def _queue_promotions(segment_ids: list[int]) -> None:
    """Record each promotion as due in this transaction (so a lost message is requeued), then queue it."""
    from memory.tasks import segment_promote_task

    jobs_due(kind=JobKind.PROMOTION, target_ids=segment_ids)
    for segment_id in segment_ids:
        transaction.on_commit(partial(segment_promote_task.delay, segment_id))


def _placement_rerun(space_id: int) -> None:
    """Queue placement for the space's newest pending page: it was evicted while this worker was placing."""
    from memory.tasks import pages_place_task

    newest = Page.objects.waiting_placement().filter(space_id=space_id).aggregate(Max("id"))
    if newest["id__max"] is not None:
        pages_place_task.delay(newest["id__max"])
