"""What a forget would do, computed without writing: the plan (`ForgetPlan`) and its counts (`ForgetImpact`).

The preview shown before confirming is the plan's impact, and memory.services.forgetting applies the same plan, so
the preview matches what happens (that module says what goes, what is re-derived and what is redacted, and why).
Planning reads memory and runs the offline steps on the remaining text; it changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Model, Q

from memory.models import (
    AuditEntry,
    ChatReply,
    EndUser,
    ExportJob,
    IdempotentRequest,
    JobStatus,
    KnowledgeEntry,
    MemoryEvent,
    Page,
    ProfileVersion,
    Segment,
)
from memory.models.tiers import ProfileAuthor
from memory.quotes import Quote, quote, quotes_any, quotes_of, redact, redact_json, said_in
from memory.statements import about_user, to_user
from memory.steps import get_steps
from memory.steps.offline_steps import chain_summary
from memory.steps.types import TurnText
from memory.text import split_sentences, text_hash

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

    def add_deletes(self, model: type[Model], ids: Iterable[int]) -> None:
        self.deletes[model] = self.deletes.get(model, set()) | set(ids)

    def deleted(self, model: type[Model]) -> set[int]:
        return self.deletes.get(model, set())

    def add_update(self, model: type[Model], pk: int, **fields) -> None:
        self.updates[(model, pk)] = self.updates.get((model, pk), {}) | fields

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
    plan.add_deletes(Page, page_ids)
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
    plan.add_deletes(KnowledgeEntry, facts)
    plan.impact.knowledge += len(facts)
    plan.tombstone_targets += [(KnowledgeEntry.item_kind, pk) for pk in facts]
    shared = Page.objects.filter(knowledge__in=facts).exclude(pk__in=page_ids).values_list("pk", flat=True)
    for pk in set(shared):
        plan.add_update(Page, pk, analysed=False)
    others = KnowledgeEntry.objects.filter(end_user=plan.end_user).exclude(pk__in=facts).without_vectors()
    for entry in _quoting(others, ["text"], plan.quotes):
        text = redact(entry.text, plan.quotes)
        if text != entry.text:
            plan.add_update(KnowledgeEntry, entry.pk, text=text, text_hash=text_hash(text))
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
            plan.add_update(Page, page.pk, **changed)
            plan.summaries_redacted.add(page.pk)
        elif changed:
            plan.add_update(Page, page.pk, **changed)
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
            plan.add_update(ChatReply, reply.pk, **changed)
            turns.add(reply.page_id or -reply.pk)
    plan.impact.turns_redacted += len(turns)


def _plan_topic_rederive(plan: ForgetPlan, page: Page) -> None:
    """Offline, a placed page whose text was redacted gets its topic and keywords from the steps again."""
    turn = TurnText(plan.value(page, "user_message"), plan.value(page, "assistant_reply"), page.at)
    topic = get_steps().chain_and_topic(previous=None, previous_chain_summary="", page=turn, similarity=None)
    plan.add_update(Page, page.pk, topic_summary=topic.topic_summary, keywords=list(topic.keywords))


def _remaining(segment: Segment, page_ids: set[int]) -> list[Page]:
    return list(Page.objects.filter(segment=segment).exclude(pk__in=page_ids).order_by("seq"))


def _plan_segments(plan: ForgetPlan, pages: list[Page], whole: Segment | None) -> None:
    """A segment left without pages goes; one that keeps pages is re-derived from them (unless locked)."""
    page_ids = {p.pk for p in pages}
    segment_ids = {p.segment_id for p in pages if p.segment_id} | ({whole.pk} if whole else set())
    for segment in Segment.objects.filter(pk__in=segment_ids):
        remaining = _remaining(segment, page_ids)
        if not remaining:
            plan.add_deletes(Segment, [segment.pk])
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
        plan.add_update(Segment, segment.pk, summary=summary)
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
    plan.add_update(Segment, segment.pk, **fields)
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
                plan.add_update(Page, member.pk, **fields)
            previous = member


def scrubbed_lines(text: str, quotes: list[Quote], removed: list[str]) -> str:
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
        if replay and steps is not None and not version.locked:
            turns = [TurnText(p.user_message, p.assistant_reply, p.at) for p in sources if p.pk not in page_ids]
            text = scrubbed_lines(steps.profile_update(profile=previous, pages=turns), plan.quotes, removed_texts)
        else:
            text = scrubbed_lines(version.text, plan.quotes, removed_texts)
        previous = text
        if not text.strip():
            plan.add_deletes(ProfileVersion, [version.pk])
            plan.impact.profile_versions += 1
            plan.tombstone_targets.append((ProfileVersion.item_kind, version.pk))
        elif text != version.text:
            plan.add_update(ProfileVersion, version.pk, text=text)
            plan.impact.profile_rederived += 1


def _plan_profile_stale(plan: ForgetPlan, current: ProfileVersion) -> None:
    """With a model, an automatic profile is re-derived by the worker (a hand-written or locked one is kept)."""
    if current.author == ProfileAuthor.SYSTEM and not current.locked:
        plan.profile_stale = True


def _profile_affected(version: ProfileVersion, page_ids: set[int], quotes: list[Quote], removed: list[str]) -> bool:
    if any(p.pk in page_ids for p in version.source_pages.all()) or quotes_any(version.text, quotes):
        return True
    return bool(removed) and scrubbed_lines(version.text, [], removed) != version.text


def _plan_records(plan: ForgetPlan, page_ids: set[int], pages: list[Page]) -> None:
    """Stored API answers and export bundles that hold the forgotten text; events and audit entries quoting it."""
    stored = IdempotentRequest.objects.filter(end_user=plan.end_user, response__isnull=False)
    answers = [r.pk for r in stored.only("id", "response") if _answer_holds(r.response, page_ids, plan.quotes)]
    plan.add_deletes(IdempotentRequest, answers)
    plan.impact.stored_responses += len(answers)
    events = MemoryEvent.objects.filter(end_user=plan.end_user)
    for event in _quoting(events, ["detail", "error"], plan.quotes):
        changed = {"detail": redact_json(event.detail, plan.quotes), "error": redact(event.error, plan.quotes)}
        changed = {name: value for name, value in changed.items() if value != getattr(event, name)}
        if changed:
            plan.add_update(MemoryEvent, event.pk, **changed)
            plan.impact.records_redacted += 1
    since = min((p.created_at for p in pages), default=None)
    exports = ExportJob.objects.filter(end_user=plan.end_user, status=JobStatus.DONE, finished_at__gte=since)
    for job in exports if since else []:
        plan.add_update(ExportJob, job.pk, status=JobStatus.EXPIRED)
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
    memory_used = response.get("memory_used")
    used: dict = memory_used if isinstance(memory_used, dict) else {}
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
    plan.add_deletes(KnowledgeEntry, [entry.pk])
    plan.impact.knowledge = 1
    plan.tombstone_targets.append((KnowledgeEntry.item_kind, entry.pk))
    _plan_profile(plan, set(), removed_texts=[entry.text])
    return plan


def plan_profile_version_forget(*, version: ProfileVersion) -> ForgetPlan:
    plan = ForgetPlan(end_user=version.end_user)
    plan.add_deletes(ProfileVersion, [version.pk])
    plan.impact.profile_versions = 1
    plan.tombstone_targets.append((ProfileVersion.item_kind, version.pk))
    return plan


# --- Previews -------------------------------------------------------------------------------------------------


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
