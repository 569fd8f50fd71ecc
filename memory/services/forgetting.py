"""Forgetting exactly what was asked: an item, what was derived from it, and copies of what the user said in it.

Every forget is planned first and then applied: the plan (`ForgetPlan`) lists what goes, what is re-derived from
what remains and which records get quotes redacted; the impact preview shown before confirming is the same plan's
counts, so it matches what happens. Provenance decides what goes: facts whose source pages include a forgotten page
are deleted (a fact drawn from several pages may carry the forgotten page's content in words that cannot be told
apart from the rest, so it is not kept; its other pages are marked unanalysed so the next promotion learns again
what they support alone), the profile versions derived from it are re-derived through the memory steps, and the
chain and topic summaries, keywords and centroid of what it belonged to are rebuilt from the remaining pages.
Quotes of the page's own user text elsewhere (replies, summaries, stored API answers, events) are redacted after
folding both sides (memory.quotes); text the page does not own is never touched. Stored API answers that quote it
are deleted (replaying their key must not return the forgotten text), and so are export bundles built since.
The audit entry keeps who, when, why, what kind of item and the impact counts, never the content.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from django.db import transaction
from django.db.models import Model, Q

from memory.models import (
    AuditEntry,
    ChatReply,
    EndUser,
    ExportJob,
    IdempotentRequest,
    JobKind,
    JobStatus,
    KnowledgeEntry,
    MemoryEvent,
    Page,
    PersonalDataAction,
    ProfileVersion,
    ReviewState,
    Segment,
)
from memory.models.tiers import ProfileAuthor
from memory.offline import chain_summary, profile_merge
from memory.quotes import Quote, quote, quotes_any, quotes_of, redact, redact_json, said_in
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor, audit_record, audit_tombstone_entries, audit_tombstone_target
from memory.services.embedding_state import embedder_for_store
from memory.services.jobs import job_claim, job_done, job_release, job_renew, jobs_due, lease_kept
from memory.services.passages import page_passages_set, page_vectors_embed
from memory.services.personal_data import redactor_for, review_state_for, steps_for_prompts
from memory.services.promotion import text_hash
from memory.services.webhook_events import item_data, webhook_event_emit, webhook_events_forget
from memory.statements import about_user, to_user
from memory.step_types import TurnText
from memory.steps import get_steps
from memory.text import split_sentences

SEGMENT_KEYWORDS = 8
ITEM_WORDS = {"page": "this turn", "segment": "this topic", "knowledge": "this fact", "profile_version": "this version"}


@dataclass
class ForgetImpact:
    """What a forget removes, re-derives and redacts, counted by kind (no content); the preview and the result."""

    pages: int = 0
    segments: int = 0
    knowledge: int = 0
    profile_versions: int = 0
    topics_rederived: int = 0
    profile_rederived: int = 0
    chains_rederived: int = 0
    turns_redacted: int = 0
    records_redacted: int = 0
    stored_responses: int = 0
    exports_expired: int = 0

    def as_detail(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v}

    def describe(self, kind: str) -> str:
        """One line: "removes this turn; re-derives 1 topic and the profile; deletes 2 facts; …"."""
        parts = [f"removes {ITEM_WORDS.get(kind, 'it')}"]
        if kind == "segment" and self.pages:
            parts[0] += f" and its {_count(self.pages, 'turn')}"
        rederived = [_count(self.topics_rederived, "topic")] if self.topics_rederived else []
        rederived += [_count(self.chains_rederived, "conversation summary", "conversation summaries")] * bool(
            self.chains_rederived
        )
        rederived += ["the profile"] if self.profile_rederived else []
        if rederived:
            parts.append("re-derives " + _and(rederived))
        facts = self.knowledge - (kind == "knowledge")
        if facts:
            parts.append(f"deletes {_count(facts, 'fact')}")
        if self.turns_redacted:
            parts.append(f"redacts quotes in {_count(self.turns_redacted, 'later reply', 'later replies')}")
        if self.records_redacted:
            parts.append(f"redacts quotes in {_count(self.records_redacted, 'other record')}")
        if self.stored_responses:
            parts.append(f"deletes {_count(self.stored_responses, 'stored API answer')}")
        if self.exports_expired:
            parts.append(f"deletes {_count(self.exports_expired, 'export file')}")
        return "; ".join(parts)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


@dataclass
class ForgetPlan:
    """Everything one forget will do, computed without writing; `impact` counts it."""

    end_user: EndUser
    impact: ForgetImpact = field(default_factory=ForgetImpact)
    quotes: list[Quote] = field(default_factory=list)
    deletes: dict[type[Model], set[int]] = field(default_factory=dict)
    updates: dict[tuple[type[Model], int], dict] = field(default_factory=dict)
    reembed: dict[tuple[type[Model], int], str] = field(default_factory=dict)
    summaries_redacted: set[int] = field(default_factory=set)  # pages whose only change is a summary redaction
    chain_pages_rederived: set[int] = field(default_factory=set)  # pages whose chain summary was rolled again
    tombstone_targets: list[tuple[str, int]] = field(default_factory=list)
    tombstone_audit_ids: list[int] = field(default_factory=list)
    export_paths: list[str] = field(default_factory=list)
    profile_stale: bool = False

    def delete(self, model: type[Model], ids: Iterable[int]) -> None:
        self.deletes.setdefault(model, set()).update(ids)

    def deleted(self, model: type[Model]) -> set[int]:
        return self.deletes.get(model, set())

    def update(self, model: type[Model], pk: int, **fields) -> None:
        self.updates.setdefault((model, pk), {}).update(fields)

    def value(self, obj: Model, name: str):
        """A field's value as the plan leaves it."""
        return self.updates.get((type(obj), obj.pk), {}).get(name, getattr(obj, name))


# --- Planning -----------------------------------------------------------------------------------------------------


def _llm_mode() -> bool:
    return get_steps().mode != "offline"


def _user_pages(end_user: EndUser):
    return Page.objects.filter(space__end_user=end_user)


def _own_quotes(end_user: EndUser, pages: list[Page]) -> list[Quote]:
    """Quotes of the forgotten pages' user text that no other page of the user also says (theirs too, then)."""
    candidates = quotes_of(p.user_message for p in pages)
    others = _quoting(_user_pages(end_user).exclude(pk__in=[p.pk for p in pages]), ["user_message"], candidates)
    said_elsewhere = list(others.values_list("user_message", flat=True))  # one read for every candidate
    quotes = [c for c in candidates if not any(said_in(c.text, text) for text in said_elsewhere)]
    return quotes + _restated(pages, quotes)


def _restated(pages: list[Page], own: list[Quote]) -> list[Quote]:
    """The page's own sentences as memory restates them: about the user (offline facts and profile lines) and told
    back to the user (offline answers), so those copies are found as well as verbatim ones."""
    kept = {q.text for q in own}
    sentences = [s for p in pages for s in split_sentences(p.user_message) if quote(s).text in kept]
    forms = {form for sentence in sentences for form in (about_user(sentence), to_user(sentence))}
    return [q for q in quotes_of(forms) if q.text not in kept]


def _quoting(queryset, fields: list[str], quotes: list[Quote]):
    """Rows of `queryset` whose `fields` may hold a quote (a database prefilter on each quote's anchor)."""
    if not quotes:
        return queryset.none()
    if any(q.anchor is None for q in quotes):
        return queryset
    match = Q()
    for q in quotes:
        for name in fields:
            match |= Q(**{f"{name}__icontains": q.anchor})
    return queryset.filter(match)


def plan_pages_forget(*, end_user: EndUser, pages: list[Page], segment: Segment | None = None) -> ForgetPlan:
    """The plan for forgetting `pages` (and `segment` itself, when the whole segment goes)."""
    plan = ForgetPlan(end_user=end_user, quotes=_own_quotes(end_user, pages))
    page_ids = {p.pk for p in pages}
    plan.delete(Page, page_ids)
    plan.impact.pages = len(page_ids)
    plan.tombstone_targets += [(Page.item_kind, pk) for pk in page_ids]
    _plan_facts(plan, page_ids, segment)
    _plan_page_redactions(plan, page_ids)
    _plan_segments(plan, pages, segment)
    _plan_chains(plan, pages)
    _plan_profile(plan, page_ids, removed_texts=[])
    _plan_records(plan, page_ids, pages)
    plan.impact.records_redacted += len(plan.summaries_redacted - plan.chain_pages_rederived)
    return plan


def _plan_facts(plan: ForgetPlan, page_ids: set[int], segment: Segment | None) -> None:
    """Facts learnt from the pages go; the other pages they came from are analysed again at the next promotion."""
    learnt = Q(source_pages__in=page_ids) | (Q(source_segment=segment) if segment else Q(pk__in=[]))
    facts = set(KnowledgeEntry.objects.filter(Q(end_user=plan.end_user) & learnt).values_list("pk", flat=True))
    plan.delete(KnowledgeEntry, facts)
    plan.impact.knowledge += len(facts)
    plan.tombstone_targets += [(KnowledgeEntry.item_kind, pk) for pk in facts]
    shared = Page.objects.filter(knowledge__in=facts).exclude(pk__in=page_ids).values_list("pk", flat=True)
    for pk in set(shared):
        plan.update(Page, pk, analysed=False)
    others = KnowledgeEntry.objects.filter(end_user=plan.end_user).exclude(pk__in=facts).without_vectors()
    for entry in _quoting(others, ["text"], plan.quotes):
        text = redact(entry.text, plan.quotes)
        if text != entry.text:
            plan.update(KnowledgeEntry, entry.pk, text=text, text_hash=text_hash(text))
            plan.reembed[(KnowledgeEntry, entry.pk)] = text
            plan.impact.records_redacted += 1


def _plan_page_redactions(plan: ForgetPlan, page_ids: set[int]) -> None:
    """Later turns (and their reply records) that quote the forgotten user text, in every space of the user."""
    text_fields = ["user_message", "assistant_reply", "chain_summary", "topic_summary"]
    turns: set[int] = set()
    rows = _quoting(_user_pages(plan.end_user).exclude(pk__in=page_ids), text_fields, plan.quotes)
    for page in rows.without_vectors():
        changed = {name: redact(getattr(page, name), plan.quotes) for name in text_fields}
        changed = {name: text for name, text in changed.items() if text != getattr(page, name)}
        if changed and not {"user_message", "assistant_reply"} & set(changed):
            plan.update(Page, page.pk, **changed)
            plan.summaries_redacted.add(page.pk)
        elif changed:
            plan.update(Page, page.pk, **changed)
            if page.topic_summary and not _llm_mode():
                _plan_topic_rederive(plan, page)
            plan.reembed[(Page, page.pk)] = "User: {user_message}\nAssistant: {assistant_reply}".format(
                **{name: plan.value(page, name) for name in ("user_message", "assistant_reply")}
            )
            turns.add(page.pk)
    replies = ChatReply.objects.filter(space__end_user=plan.end_user).exclude(page_id__in=page_ids)
    for reply in _quoting(replies, ["user_message", "memory_used", "dropped", "error"], plan.quotes):
        changed = {name: redact(getattr(reply, name), plan.quotes) for name in ("user_message", "error")}
        changed |= {name: redact_json(getattr(reply, name), plan.quotes) for name in ("memory_used", "dropped")}
        changed = {name: value for name, value in changed.items() if value != getattr(reply, name)}
        if changed:
            plan.update(ChatReply, reply.pk, **changed)
            turns.add(reply.page_id or -reply.pk)
    plan.impact.turns_redacted += len(turns)


def _plan_topic_rederive(plan: ForgetPlan, page: Page) -> None:
    """Offline, a placed page whose text was redacted gets its topic and keywords from the steps again."""
    turn = TurnText(plan.value(page, "user_message"), plan.value(page, "assistant_reply"), page.at)
    topic = get_steps().chain_and_topic(previous=None, previous_chain_summary="", page=turn, similarity=None)
    plan.update(Page, page.pk, topic_summary=topic.topic_summary, keywords=list(topic.keywords))


def _remaining(segment: Segment, page_ids: set[int]) -> list[Page]:
    return list(Page.objects.filter(segment=segment).exclude(pk__in=page_ids).order_by("seq"))


def _plan_segments(plan: ForgetPlan, pages: list[Page], whole: Segment | None) -> None:
    """A segment left without pages goes; one that keeps pages is re-derived from them (unless locked)."""
    page_ids = {p.pk for p in pages}
    segment_ids = {p.segment_id for p in pages if p.segment_id} | ({whole.pk} if whole else set())
    for segment in Segment.objects.filter(pk__in=segment_ids):
        remaining = _remaining(segment, page_ids)
        if not remaining:
            plan.delete(Segment, [segment.pk])
            plan.impact.segments += 1
            plan.tombstone_targets.append((Segment.item_kind, segment.pk))
        elif segment.locked:
            _plan_segment_redaction(plan, segment)
        else:
            _plan_segment_rederive(plan, segment, remaining)
    others = Segment.objects.filter(space__end_user=plan.end_user).exclude(pk__in=segment_ids).without_vectors()
    for segment in _quoting(others, ["summary"], plan.quotes):
        _plan_segment_redaction(plan, segment)


def _plan_segment_redaction(plan: ForgetPlan, segment: Segment) -> None:
    summary = redact(segment.summary, plan.quotes)
    if summary != segment.summary:
        plan.update(Segment, segment.pk, summary=summary)
        plan.impact.records_redacted += 1


def _plan_segment_rederive(plan: ForgetPlan, segment: Segment, remaining: list[Page]) -> None:
    """As updating derives them: centroid of the members' topic vectors, the most central member's topic, the
    members' most common keywords."""
    vectors = [np.asarray(p.topic_vector, dtype=np.float32) for p in remaining if p.topic_vector is not None]
    centroid = None
    if vectors:
        centroid = np.mean(vectors, axis=0)
        centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    topics = [(p, plan.value(p, "topic_summary")) for p in remaining if plan.value(p, "topic_summary")]
    summary = _central_topic(topics, centroid) or redact(segment.summary, plan.quotes) or "(summary removed)"
    counts = Counter(k for p in remaining for k in p.keywords)
    fields = {"summary": summary, "keywords": [k for k, _ in counts.most_common(SEGMENT_KEYWORDS)]}
    if centroid is not None:
        fields["embedding"] = centroid
    plan.update(Segment, segment.pk, **fields)
    plan.impact.topics_rederived += 1


def _central_topic(topics: list[tuple[Page, str]], centroid: np.ndarray | None) -> str | None:
    """The topic summary of the member nearest the centroid, or the latest member's without vectors."""
    with_vectors = [(p, t) for p, t in topics if p.topic_vector is not None]
    if centroid is None or not with_vectors:
        return topics[-1][1] if topics else None
    return max(with_vectors, key=lambda pt: float(np.dot(np.asarray(pt[0].topic_vector), centroid)))[1]


def _plan_chains(plan: ForgetPlan, pages: list[Page]) -> None:
    """Each dialogue chain a forgotten page belonged to: relinked around it, its summary rolled again from the
    remaining members' topics (extractively, in both modes: a forget calls no model)."""
    page_ids = {p.pk for p in pages}
    heads = {p.chain_head_id for p in pages if p.chain_head_id}
    for head in heads:
        members = list(Page.objects.filter(chain_head_id=head).order_by("seq").without_vectors())
        remaining = [m for m in members if m.pk not in page_ids]
        if not remaining:
            continue
        new_head, summary, previous = remaining[0].pk, "", None
        for member in remaining:
            summary = chain_summary(summary, plan.value(member, "topic_summary"))
        plan.impact.chains_rederived += any(plan.value(m, "chain_summary") != summary for m in remaining)
        for member in remaining:
            fields = {}
            if member.chain_head_id != new_head:
                fields["chain_head_id"] = new_head
            if member.prev_page_id != (previous.pk if previous else None) and (
                member.prev_page_id is None or member.prev_page_id in page_ids
            ):
                fields["prev_page_id"] = previous.pk if previous else None
            if plan.value(member, "chain_summary") != summary:
                fields["chain_summary"] = summary
                plan.chain_pages_rederived.add(member.pk)
            if fields:
                plan.update(Page, member.pk, **fields)
            previous = member


def _scrubbed_lines(text: str, quotes: list[Quote], removed: list[str]) -> str:
    """The text without the lines that quote forgotten text or state a removed fact."""
    gone = [quote(t) for t in removed if t.strip()]
    kept = [line for line in text.splitlines() if not quotes_any(line, quotes) and not quotes_any(line, gone)]
    return "\n".join(kept)


def _plan_profile(plan: ForgetPlan, page_ids: set[int], removed_texts: list[str]) -> None:
    """Profile versions from the first one derived from (or stating) forgotten memory on.

    Offline, each system version derived from pages is derived again through the steps, from the version before it
    and its remaining source pages, as promotion derived it; other versions lose the lines that quote forgotten
    text or state a removed fact. With a model the lines go now and the current profile is marked stale (withheld
    from prompts) until the worker re-derives it.
    """
    versions = list(
        ProfileVersion.objects.filter(end_user=plan.end_user).order_by("number").prefetch_related("source_pages")
    )
    first = next((v for v in versions if _profile_affected(v, page_ids, plan.quotes, removed_texts)), None)
    if _llm_mode() and versions and (first is not None or removed_texts):
        _plan_profile_stale(plan, versions[-1])
    if first is not None:
        _plan_profile_versions(plan, versions, first, page_ids, removed_texts)
    if plan.profile_stale:
        plan.impact.profile_rederived = max(plan.impact.profile_rederived, 1)


def _plan_profile_versions(
    plan: ForgetPlan,
    versions: list[ProfileVersion],
    first: ProfileVersion,
    page_ids: set[int],
    removed_texts: list[str],
) -> None:
    """Each version from `first` on: replayed through the offline steps, or scrubbed of the lines in question."""
    steps = None if _llm_mode() else get_steps()
    previous = next((v.text for v in reversed(versions) if v.number < first.number), "")
    for version in (v for v in versions if v.number >= first.number):
        sources = sorted(version.source_pages.all(), key=lambda p: p.seq)
        replay = steps is not None and page_ids and sources and version.author == ProfileAuthor.SYSTEM
        if replay and not version.locked:
            turns = [TurnText(p.user_message, p.assistant_reply, p.at) for p in sources if p.pk not in page_ids]
            text = _scrubbed_lines(steps.profile_update(profile=previous, pages=turns), plan.quotes, removed_texts)
        else:
            text = _scrubbed_lines(version.text, plan.quotes, removed_texts)
        previous = text
        if not text.strip():
            plan.delete(ProfileVersion, [version.pk])
            plan.impact.profile_versions += 1
            plan.tombstone_targets.append((ProfileVersion.item_kind, version.pk))
        elif text != version.text:
            plan.update(ProfileVersion, version.pk, text=text)
            plan.impact.profile_rederived += 1


def _plan_profile_stale(plan: ForgetPlan, current: ProfileVersion) -> None:
    """With a model, an automatic profile is re-derived by the worker (a hand-written or locked one is kept)."""
    if current.author == ProfileAuthor.SYSTEM and not current.locked:
        plan.profile_stale = True


def _profile_affected(version: ProfileVersion, page_ids: set[int], quotes: list[Quote], removed: list[str]) -> bool:
    if any(p.pk in page_ids for p in version.source_pages.all()) or quotes_any(version.text, quotes):
        return True
    return bool(removed) and _scrubbed_lines(version.text, [], removed) != version.text


def _plan_records(plan: ForgetPlan, page_ids: set[int], pages: list[Page]) -> None:
    """Stored API answers and export bundles that hold the forgotten text; events and audit entries quoting it."""
    stored = IdempotentRequest.objects.filter(end_user=plan.end_user, response__isnull=False)
    answers = [r.pk for r in stored.only("id", "response") if _answer_holds(r.response, page_ids, plan.quotes)]
    plan.delete(IdempotentRequest, answers)
    plan.impact.stored_responses += len(answers)
    events = MemoryEvent.objects.filter(end_user=plan.end_user)
    for event in _quoting(events, ["detail", "error"], plan.quotes):
        changed = {"detail": redact_json(event.detail, plan.quotes), "error": redact(event.error, plan.quotes)}
        changed = {name: value for name, value in changed.items() if value != getattr(event, name)}
        if changed:
            plan.update(MemoryEvent, event.pk, **changed)
            plan.impact.records_redacted += 1
    since = min((p.created_at for p in pages), default=None)
    exports = ExportJob.objects.filter(end_user=plan.end_user, status=JobStatus.DONE, finished_at__gte=since)
    for job in exports if since else []:
        plan.update(ExportJob, job.pk, status=JobStatus.EXPIRED)
        plan.export_paths.append(job.file_path)
        plan.impact.exports_expired += 1
    _plan_audit(plan, removed_texts=[])


def _answer_holds(response, page_ids: set[int], quotes: list[Quote]) -> bool:
    """Whether a stored answer names a forgotten page or quotes its text anywhere in its JSON."""
    if isinstance(response, dict):
        if _names_page(response, page_ids):
            return True
        return any(_answer_holds(v, page_ids, quotes) for v in response.values())
    if isinstance(response, list):
        return any(_answer_holds(v, page_ids, quotes) for v in response)
    return isinstance(response, str) and quotes_any(response, quotes)


def _names_page(response: dict, page_ids: set[int]) -> bool:
    """Whether an answer is the forgotten page's own, or says it used the page (a reply may restate it in words no
    quote finds: "You like kiwis — you told me on 22 Nov.")."""
    used = response.get("memory_used") if isinstance(response.get("memory_used"), dict) else {}
    named = {response.get("page_id")}
    named |= {p.get("id") for p in used.get("pages", []) if isinstance(p, dict)}
    named |= {i for key in ("short_term_page_ids", "pinned_page_ids") for i in used.get(key, []) or []}
    return bool(named & page_ids)


def _plan_audit(plan: ForgetPlan, removed_texts: list[str]) -> None:
    """Earlier audit entries whose reason, before or after quote what is forgotten get tombstoned."""
    quotes = plan.quotes + [quote(t) for t in removed_texts if t.strip()]
    entries = AuditEntry.objects.filter(tenant_id=plan.end_user.tenant_id, subject_id=plan.end_user.pk, erased=False)
    entries = _quoting(entries, ["reason", "before", "after"], quotes).only("id", "reason", "before", "after")
    for entry in entries:
        if any(_json_quotes(value, quotes) for value in (entry.reason, entry.before, entry.after)):
            plan.tombstone_audit_ids.append(entry.pk)


def _json_quotes(value, quotes: list[Quote]) -> bool:
    return redact_json(value, quotes) != value


def plan_knowledge_forget(*, entry: KnowledgeEntry) -> ForgetPlan:
    """The plan for forgetting one fact: it goes, and the profile lines stating it are re-derived."""
    plan = ForgetPlan(end_user=entry.end_user)
    plan.delete(KnowledgeEntry, [entry.pk])
    plan.impact.knowledge = 1
    plan.tombstone_targets.append((KnowledgeEntry.item_kind, entry.pk))
    _plan_profile(plan, set(), removed_texts=[entry.text])
    return plan


def plan_profile_version_forget(*, version: ProfileVersion) -> ForgetPlan:
    plan = ForgetPlan(end_user=version.end_user)
    plan.delete(ProfileVersion, [version.pk])
    plan.impact.profile_versions = 1
    plan.tombstone_targets.append((ProfileVersion.item_kind, version.pk))
    return plan


# --- Applying -----------------------------------------------------------------------------------------------------


DELETE_ORDER = (IdempotentRequest, KnowledgeEntry, ProfileVersion, Page, Segment)


def _files_delete(paths: Iterable[Path]) -> None:
    """Delete each file that is still there (after the transaction that forgot it commits)."""
    for path in paths:
        path.unlink(missing_ok=True)


def plan_apply(
    plan: ForgetPlan, *, item: Model | None, actor: Actor, reason: str, request_id: str, action: str = ""
) -> ForgetImpact:
    """Carry out a plan inside the caller's transaction: tombstones, the audit entry, deletes, then updates.

    `item` is what was asked to be forgotten; a plan for several items (retention) passes none and names its
    `action` instead."""
    tenant_id = plan.end_user.tenant_id
    for target_type, target_id in plan.tombstone_targets:
        audit_tombstone_target(tenant_id=tenant_id, target_type=target_type, target_id=target_id)
    audit_tombstone_entries(ids=plan.tombstone_audit_ids)
    audit_record(
        tenant=tenant_id,
        actor=actor,
        action=action or f"{item.item_kind}.forget",
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
    for (model, pk), fields in plan.updates.items():
        if pk not in plan.deleted(model):
            model.objects.filter(pk=pk).update(**fields)
    _reembed(plan)
    if plan.profile_stale:
        _profile_mark_stale(plan.end_user)
    paths = [path for path in plan.export_paths if path]
    transaction.on_commit(partial(_files_delete, [Path(path) for path in paths]))
    _forgotten_emit(plan, item, action or f"{item.item_kind}.forget")
    return plan.impact


def _forgotten_emit(plan: ForgetPlan, item: Model | None, action: str) -> None:
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
            model.objects.filter(pk=pk, embedding__isnull=False).update(embedding=vector)
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


# --- The services -------------------------------------------------------------------------------------------------


def _segment_pages(segment: Segment) -> list[Page]:
    return list(Page.objects.filter(segment=segment).order_by("seq").without_vectors())


def page_forget_impact(*, page: Page) -> ForgetImpact:
    """What forgetting the page would do, without doing it."""
    return plan_pages_forget(end_user=page.end_user, pages=[page]).impact


def segment_forget_impact(*, segment: Segment) -> ForgetImpact:
    return plan_pages_forget(end_user=segment.end_user, pages=_segment_pages(segment), segment=segment).impact


def knowledge_forget_impact(*, entry: KnowledgeEntry) -> ForgetImpact:
    return plan_knowledge_forget(entry=entry).impact


def profile_version_forget_impact(*, version: ProfileVersion) -> ForgetImpact:
    return plan_profile_version_forget(version=version).impact


# --- The profile after a fact changed ---------------------------------------------------------------------------


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
    kept = _scrubbed_lines(current.text, [], [before])
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
