"""Forgetting exactly what was asked: an item, what was derived from it, and copies of what the user said in it.

Every forget is planned first (memory.selectors.forgetting) and then applied here: the plan (`ForgetPlan`) lists
what goes, what is re-derived from what remains and which records get quotes redacted; the impact preview shown
before confirming is the same plan's counts, so it matches what happens. Provenance decides what goes: facts whose
source pages include a forgotten page are deleted (a fact drawn from several pages may carry the forgotten page's
content in words that cannot be told apart from the rest, so it is not kept; its other pages are marked unanalysed
so the next promotion learns again what they support alone), the profile versions derived from it are re-derived
through the memory steps, and the chain and topic summaries, keywords and centroid of what it belonged to are
rebuilt from the remaining pages. Quotes of the page's own user text elsewhere (replies, summaries, stored API
answers, events) are redacted after folding both sides (memory.quotes); text the page does not own is never touched.
Stored API answers that quote it are deleted (replaying their key must not return the forgotten text), and so are
export bundles built since.
The audit entry keeps who, when, why, what kind of item and the impact counts, never the content.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path

from django.db import transaction

from memory.models import (
    EndUser,
    IdempotentRequest,
    JobKind,
    KnowledgeEntry,
    Page,
    PersonalDataAction,
    ProfileVersion,
    ReviewState,
    Segment,
)
from memory.models.tiers import ProfileAuthor
from memory.selectors.forgetting import ForgetImpact, ForgetPlan, scrubbed_lines
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor, audit_record, audit_tombstone_entries, audit_tombstone_target
from memory.services.embedding_state import embedder_for_store
from memory.services.jobs import job_claim, job_done, job_release, job_renew, jobs_due, lease_kept
from memory.services.passages import page_passages_set, page_vectors_embed
from memory.services.personal_data import redactor_for, review_state_for, steps_for_prompts
from memory.services.webhook_events import item_data, webhook_event_emit, webhook_events_forget
from memory.steps import get_steps
from memory.steps.offline_steps import profile_merge
from memory.steps.types import TurnText

# --- Applying -----------------------------------------------------------------------------------------------------


DELETE_ORDER = (IdempotentRequest, KnowledgeEntry, ProfileVersion, Page, Segment)

# What may be forgotten by hand: each knows its kind (`item_kind`) and its owner.
Item = Page | Segment | KnowledgeEntry | ProfileVersion


def _files_delete(paths: Iterable[Path]) -> None:
    """Delete each file that is still there (after the transaction that forgot it commits)."""
    for path in paths:
        path.unlink(missing_ok=True)


def plan_apply(
    plan: ForgetPlan, *, item: Item | None, actor: Actor, reason: str, request_id: str, action: str = ""
) -> ForgetImpact:
    """Carry out a plan inside the caller's transaction: tombstones, the audit entry, deletes, then updates.

    `item` is what was asked to be forgotten; a plan for several items (retention) passes none and names its
    `action` instead."""
    if not action:
        assert item is not None, "a plan for several items names its action"
        action = f"{item.item_kind}.forget"
    tenant_id = plan.end_user.tenant_id
    for target_type, target_id in plan.tombstone_targets:
        audit_tombstone_target(tenant_id=tenant_id, target_type=target_type, target_id=target_id)
    audit_tombstone_entries(ids=plan.tombstone_audit_ids)
    audit_record(
        tenant=tenant_id,
        actor=actor,
        action=action,
        end_user=plan.end_user,
        target_type=item.item_kind if item is not None else "",
        target_id=item.pk if item is not None else None,
        reason=reason,
        detail={"impact": plan.impact.as_detail()},
        request_id=request_id,
    )
    for model in DELETE_ORDER:
        if plan.deleted(model):
            model.objects.filter(pk__in=plan.deleted(model)).delete()
    for (updated, pk), fields in plan.updates.items():
        if pk not in plan.deleted(updated):
            updated._default_manager.filter(pk=pk).update(**fields)  # `objects`: no model here has another manager
    _reembed(plan)
    if plan.profile_stale:
        _profile_mark_stale(plan.end_user)
    paths = [path for path in plan.export_paths if path]
    transaction.on_commit(partial(_files_delete, [Path(path) for path in paths]))
    _forgotten_emit(plan, item, action)
    return plan.impact


def _forgotten_emit(plan: ForgetPlan, item: Item | None, action: str) -> None:
    """`memory.forgotten` after commit (ids and counts, no text); earlier events naming what went lose their text."""
    owner = plan.end_user
    named = item_data(kind=item.item_kind, id=item.pk) if item is not None else None
    data = {"user": owner.external_id, "item": named, "action": action, "impact": plan.impact.as_detail()}
    webhook_event_emit(tenant_id=owner.tenant_id, type="memory.forgotten", data=data, subject_id=owner.pk)
    gone = {pk for model in DELETE_ORDER if model is not IdempotentRequest for pk in plan.deleted(model)}
    webhook_events_forget(tenant_id=owner.tenant_id, subject_id=owner.pk, item_ids=gone)


def _reembed(plan: ForgetPlan) -> None:
    """Vectors of redacted text are recomputed: a vector of the forgotten words would still carry them."""
    items = [(key, text) for key, text in plan.reembed.items() if key[1] not in plan.deleted(key[0])]
    others = [(key, text) for key, text in items if key[0] is not Page]
    if others:
        vectors = embedder_for_store().embed([text for _, text in others])
        for ((model, pk), _), vector in zip(others, vectors, strict=True):
            model._default_manager.filter(pk=pk, embedding__isnull=False).update(embedding=vector)  # as above
    _pages_reembed({pk: text for (model, pk), text in items if model is Page})


def _pages_reembed(texts: dict[int, str]) -> None:
    """The redacted pages that have vectors (placed ones) get new ones, their passages' included."""
    if not texts:
        return
    pages = list(Page.objects.filter(pk__in=texts, embedding__isnull=False).only("id", "space_id").order_by("id"))
    if not pages:
        return
    vectors = page_vectors_embed(embedder=embedder_for_store(), texts=[texts[page.pk] for page in pages])
    for page, embedded in zip(pages, vectors, strict=True):
        # the new page vector is its topic vector (Page.topic_vector)
        Page.objects.filter(pk=page.pk).update(embedding=embedded.vector, topic_embedding=None)
    page_passages_set(pages=pages, vectors=vectors)


def _profile_mark_stale(end_user: EndUser) -> None:
    """With a model the profile is re-derived by the worker; until then it is withheld from prompts."""
    from memory.tasks import profile_rederive_task

    current = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()
    if current is not None:
        ProfileVersion.objects.filter(pk=current.pk).update(stale=True)
        jobs_due(kind=JobKind.REDERIVE, target_ids=[end_user.pk])  # the sweep's record, should the message be lost
        transaction.on_commit(lambda: profile_rederive_task.delay(end_user.pk))


# --- The profile after a fact changed ---------------------------------------------------------------------------


def _llm_mode() -> bool:
    return get_steps().mode != "offline"


def _current_profile(end_user: EndUser) -> ProfileVersion | None:
    return ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()


def profile_fact_revise(*, end_user: EndUser, before: str, after: str) -> ProfileVersion | None:
    """A corrected fact reaches the profile: offline, a new version whose lines stating the old fact are replaced by
    the corrected one (the offline profile merge); with a model, the profile is marked stale and re-derived by the
    worker. A locked or hand-written profile is left as it is. Returns the new version, if one was written."""
    current = _current_profile(end_user)
    if current is None or current.locked or current.author != ProfileAuthor.SYSTEM:
        return None
    if _llm_mode():
        _profile_mark_stale(end_user)
        return None
    kept = scrubbed_lines(current.text, [], [before])
    if kept == current.text:
        return None  # the profile never stated the old fact
    version = ProfileVersion.objects.create(
        end_user=end_user,
        number=current.number + 1,
        text=profile_merge(kept, [after]),
        source_segment_id=current.source_segment_id,
    )
    version.source_pages.set(current.source_pages.all())
    return version


def profile_rederive(*, end_user_id: int) -> ProfileVersion | None:
    """Re-derive a stale profile from the user's remaining facts through the steps, as a new version.

    Runs under a job lease (JobKind.REDERIVE): a worker that dies mid-way loses its lease and the sweep queues the
    job again. Idempotent: a profile that is no longer stale (or gone) is left alone. Raises StepFailed when the
    model fails; the profile stays stale (withheld from prompts) and the task retries.
    """
    from memory.tasks import profile_rederive_task

    lease = job_claim(kind=JobKind.REDERIVE, target_id=end_user_id)
    if lease is None:
        return None  # another worker is re-deriving it, and runs once more afterwards
    try:
        with lease_kept(lambda: job_renew(lease)), transaction.atomic():
            version = _profile_rederive(end_user_id)
            if job_done(lease):
                transaction.on_commit(lambda: profile_rederive_task.delay(end_user_id))
            return version
    except BaseException:
        job_release(lease)  # the sweep queues it again after the back-off
        raise


def _profile_rederive(end_user_id: int) -> ProfileVersion | None:
    current = ProfileVersion.objects.select_for_update().filter(end_user_id=end_user_id).order_by("-number").first()
    if current is None or not current.stale:
        return None
    # only facts a reviewer let into prompts may shape the profile that goes into them
    facts = KnowledgeEntry.objects.filter(end_user_id=end_user_id, kind="user", review_state=ReviewState.APPROVED)
    turns = [TurnText(f.text, "", f.created_at) for f in facts.order_by("created_at", "id").without_vectors()]
    steps = steps_for_prompts(get_steps(), tenant=current.end_user.tenant_id)  # the model never reads masked data
    text = steps.profile_update(profile="", pages=turns).strip() if turns else ""
    policy = personal_data_policy_or_default(tenant=current.end_user.tenant_id)
    text = redactor_for(policy, PersonalDataAction.DO_NOT_STORE)(text)
    ProfileVersion.objects.filter(end_user_id=end_user_id, stale=True).update(stale=False)
    if not text or text == current.text:
        return None
    return ProfileVersion.objects.create(
        end_user_id=end_user_id, number=current.number + 1, text=text, review_state=review_state_for(policy, text)
    )
