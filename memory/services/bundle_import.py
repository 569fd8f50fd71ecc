"""Import of a memory bundle (a GDPR export's export.json) into an end user of this installation.

What the bundle placed stays placed: segments with their counters, pins, locks and heat history, pages with their
timestamps, dialogue chains and analysed flags, profile history, facts with their source pages. Every vector is
computed again by this installation's embedder (the bundle's are ignored: they may come from another model), every
id is new, and what the bundle had not placed yet goes through the normal pipeline: short-term pages past this
installation's STM capacity are evicted as a turn would evict them, and pending mid-term pages are placed by
`pages_place_task`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar, cast

import numpy as np
from django.db import transaction
from django.utils import timezone

from memory.bundles import BundleInvalid, bundle_fingerprint, bundle_validate, timestamp
from memory.models import (
    Assistant,
    EndUser,
    HeatSample,
    ImportStatus,
    KnowledgeEntry,
    MemoryImport,
    MemorySpace,
    Page,
    ProfileVersion,
    Segment,
)
from memory.models.job_leases import JobKind
from memory.models.privacy import PersonalDataPolicy, ReviewState
from memory.models.tiers import IMPORTED_FROM, PageSource, ReplySource
from memory.profile_withdrawal import profile_without
from memory.selectors.heat import hot_segment_ids
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor, audit_record
from memory.services.embedding_state import embedder_for_store
from memory.services.jobs import jobs_due
from memory.services.passages import PageVectors, page_passages_set, page_vectors_embed
from memory.services.personal_data import review_state_for, storage_redactor
from memory.services.promotion import text_hash
from memory.services.turns import (
    end_user_closed_check,
    end_user_write_lock,
    space_get_or_create,
    stm_evict_overflow,
)
from memory.services.webhook_events import facts_learned, webhook_events_emit
from memory.steps import get_steps

T = TypeVar("T")

__all__ = [
    "BundleInvalid",
    "ImportRefused",
    "ImportResult",
    "ImportTakenOver",
    "bundle_stage",
    "memory_import",
    "memory_import_staged",
]


class ImportRefused(Exception):
    """The bundle is valid but cannot go into this end user's memory as things stand; the message says why."""


@dataclass
class ImportResult:
    """What an import created (or, in a dry run, would create), by kind; `already_imported` when it was a no-op."""

    fingerprint: str
    dry_run: bool
    already_imported: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    assistants: dict[str, str] = field(default_factory=dict)  # the bundle's assistant -> this tenant's
    skipped: dict[str, int] = field(default_factory=dict)
    memory_import: MemoryImport | None = None


@dataclass
class _Space:
    """One memory space of the bundle and where it goes."""

    data: dict
    assistant: Assistant
    space: MemorySpace | None = None

    @property
    def opened(self) -> MemorySpace:
        """Its memory space, once `_spaces_open` has created or found it (the import writes only after that)."""
        assert self.space is not None, "_spaces_open opens every target first"
        return self.space


def memory_import(
    *,
    end_user: EndUser,
    bundle: dict,
    actor: Actor,
    assistant_external_id: str = "",
    dry_run: bool = False,
    request_id: str = "",
    job: MemoryImport | None = None,
    progress: Callable[[int], None] = lambda percent: None,
) -> ImportResult:
    """Import `bundle` into `end_user`'s memory, whole or not at all; with `dry_run`, only say what it would create.

    `assistant_external_id` sends every memory space of the bundle to that assistant of the end user's tenant
    (only for a bundle with one space); otherwise each goes to the assistant with the bundle's external id.
    Raises BundleInvalid (the first problem, with its path) for a bundle that fails validation, ImportRefused when
    an assistant is missing or inactive, or the user's memory with it is paused or already holds pages, and
    EndUserClosed when the user is deactivated or erased. Takes the user's write lock, then their spaces' locks.
    Idempotent: a bundle whose memory was already imported for this user changes nothing (`already_imported`).
    Audited as `memory.import` with the counts and the bundle's fingerprint. The tenant's do-not-store personal
    data is redacted from every text before anything is fingerprinted, stored or embedded.
    A background import (memory.services.import_jobs) passes its running `job`, which becomes the done record in
    the same transaction (ImportTakenOver, rolling everything back, when another worker took it over), and a
    `progress` callback that hears the percent done as spaces are written.
    """
    bundle_validate(bundle, now=timezone.now())
    bundle = bundle_for_storage(bundle, redact=storage_redactor(tenant=end_user.tenant_id))
    fingerprint = bundle_fingerprint(bundle)
    if dry_run:
        end_user_closed_check(end_user)
        return (
            _imported(end_user, fingerprint, dry_run=True)
            or _plan(end_user, bundle, fingerprint, assistant_external_id, dry_run=True)[0]
        )
    with transaction.atomic():
        end_user_write_lock(end_user)
        if done := _imported(end_user, fingerprint, dry_run=False):
            return done
        result, targets = _plan(end_user, bundle, fingerprint, assistant_external_id, dry_run=False)
        _import(end_user, bundle, _spaces_open(end_user, targets), fingerprint, progress)
        result.memory_import = _record(end_user, fingerprint, assistant_external_id, result.counts, actor, job)
        audit_record(
            tenant=end_user.tenant_id,
            actor=actor,
            action="memory.import",
            end_user=end_user,
            target_type="memory_import",
            target_id=result.memory_import.pk,
            detail={"fingerprint": fingerprint, "counts": result.counts, "assistants": result.assistants},
            request_id=request_id,
        )
    return result


def _imported(end_user: EndUser, fingerprint: str, *, dry_run: bool) -> ImportResult | None:
    """The earlier import of this bundle's memory into the user, if there was one."""
    done = MemoryImport.objects.filter(end_user=end_user, fingerprint=fingerprint, status=ImportStatus.DONE).first()
    if done is None:
        return None
    return ImportResult(fingerprint, dry_run, already_imported=True, counts=done.counts, memory_import=done)


def bundle_stage(*, end_user: EndUser, bundle: dict, actor: Actor, assistant_external_id: str = "") -> MemoryImport:
    """Keep a validated bundle for the console's confirm step (a dry run showed what it will create).

    Raises BundleInvalid like memory_import. Staging the same bundle again reuses its row; staging another drops
    the user's earlier staged bundle. A staged bundle is personal data of the end user: erasure deletes it with
    them, and memory_import_staged drops it once imported. It is kept with the tenant's do-not-store data redacted,
    and without what the import never reads (the exporting installation's record of the user and its audit trail).
    """
    bundle_validate(bundle, now=timezone.now())
    bundle = _importable_part(bundle_for_storage(bundle, redact=storage_redactor(tenant=end_user.tenant_id)), end_user)
    fingerprint = bundle_fingerprint(bundle)
    others = MemoryImport.objects.filter(end_user=end_user, status=ImportStatus.STAGED).exclude(fingerprint=fingerprint)
    others.delete()  # one bundle waits for confirmation per user: an abandoned dry run leaves no copy behind
    staged, _ = MemoryImport.objects.update_or_create(
        end_user=end_user,
        fingerprint=fingerprint,
        status=ImportStatus.STAGED,
        defaults={
            "tenant_id": end_user.tenant_id,
            "bundle": bundle,
            "assistant_external_id": assistant_external_id,
            "requested_by": actor.label[:200],
        },
    )
    return staged


def _importable_part(bundle: dict, end_user: EndUser) -> dict:
    """The bundle as the import reads it: its memory, and the user it goes to named by this installation's id."""
    parts = ("format", "schema_version", "memory", "profile_versions", "knowledge")
    kept = {key: bundle[key] for key in parts if key in bundle}
    return {**kept, "end_user": {"external_id": end_user.external_id}}


def held_bundle(row: MemoryImport) -> dict:
    """The bundle of a staged, queued or running import: each is created with one, and it is dropped only when the
    import is done or failed (the constraint memory_import_keeps_no_bundle_once_done)."""
    return cast(dict, row.bundle)


def memory_import_staged(*, staged: MemoryImport, actor: Actor, request_id: str = "") -> ImportResult:
    """Import a bundle staged by bundle_stage, then drop it (the imported row keeps only the counts).

    Raises like memory_import; the staged bundle stays when the import is refused, so it can be confirmed later.
    """
    with transaction.atomic():
        result = memory_import(
            end_user=staged.end_user,
            bundle=held_bundle(staged),
            actor=actor,
            assistant_external_id=staged.assistant_external_id,
            request_id=request_id,
        )
        MemoryImport.objects.filter(pk=staged.pk, status=ImportStatus.STAGED).delete()
    return result


STORED_TEXTS = frozenset({"user_message", "assistant_reply", "chain_summary", "topic_summary", "summary", "text"})


def bundle_for_storage(bundle: dict, *, redact: Callable[[str], str]) -> dict:
    """A copy of the bundle with `redact` applied to every memory text. A keyword survives only if a redacted text
    still holds it: keywords were extracted from the texts, so one taken from a redacted value goes with it."""
    redacted = _texts_mapped(bundle, text=redact)
    if redacted == bundle:
        return bundle  # nothing to redact: the keywords stay as extracted
    texts: list[str] = []

    def collected(text: str) -> str:
        texts.append(text)
        return text

    _texts_mapped(redacted, text=collected)
    corpus = " ".join(texts).lower()
    return _texts_mapped(
        redacted, keywords=lambda words: [w for w in words if isinstance(w, str) and w.lower() in corpus]
    )


def _texts_mapped(value, *, text: Callable[[str], str] = str, keywords: Callable[[list], list] = list):
    """A copy of `value` (a bundle or part of one) with `text` applied to each memory text and `keywords` to each
    keyword list, at any depth."""
    if isinstance(value, list):
        return [_texts_mapped(item, text=text, keywords=keywords) for item in value]
    if not isinstance(value, dict):
        return value
    mapped: dict = {}
    for key, item in value.items():
        if key in STORED_TEXTS and isinstance(item, str):
            mapped[key] = text(item)
        elif key == "keywords" and isinstance(item, list):
            mapped[key] = keywords(item)
        else:
            mapped[key] = _texts_mapped(item, text=text, keywords=keywords)
    return mapped


# --- Planning: where each space goes, and what will be created ----------------------------------------------------


def _targets(end_user: EndUser, bundle: dict, assistant_external_id: str) -> list[_Space]:
    """The assistant of this tenant each memory space of the bundle goes to; ImportRefused when one is missing."""
    spaces = bundle["memory"]
    if assistant_external_id and len(spaces) > 1:
        raise ImportRefused(
            f"the bundle holds memory with {len(spaces)} assistants; choosing one assistant works only for a bundle "
            "with one"
        )
    targets = []
    for space in spaces:
        name = assistant_external_id or space["assistant"]["external_id"]
        assistant = Assistant.objects.filter(tenant_id=end_user.tenant_id, external_id=name).first()
        if assistant is None:
            raise ImportRefused(f"this tenant has no assistant {name!r}; create it, or choose one to import into")
        if not assistant.is_active:
            raise ImportRefused(f"the assistant {name!r} is deactivated")
        targets.append(_Space(data=space, assistant=assistant))
    return targets


def _knowledge_assistants(end_user: EndUser, bundle: dict, targets: list[_Space]) -> dict[str, Assistant]:
    """Where assistant knowledge goes: the assistant its space went to, else the tenant's assistant of that name."""
    mapping = {t.data["assistant"]["external_id"]: t.assistant for t in targets}
    for position, entry in enumerate(bundle["knowledge"]):
        name = entry.get("assistant")
        if name is None or name in mapping:
            continue
        found = Assistant.objects.filter(tenant_id=end_user.tenant_id, external_id=name).first()
        if found is None:
            raise ImportRefused(f"$.knowledge[{position}].assistant: this tenant has no assistant {name!r}")
        mapping[name] = found
    return mapping


def _plan(
    end_user: EndUser, bundle: dict, fingerprint: str, assistant_external_id: str, *, dry_run: bool
) -> tuple[ImportResult, list[_Space]]:
    """Check that the bundle can go into this user's memory now and count what it will create; where each space
    goes."""
    targets = _targets(end_user, bundle, assistant_external_id)
    for target in targets:
        _space_check(end_user, target.assistant)
    _knowledge_assistants(end_user, bundle, targets)
    pages = [page for space in bundle["memory"] for page in space["pages"]]
    segments = [segment for space in bundle["memory"] for segment in space["segments"]]
    knowledge, held = _knowledge_new(end_user, bundle, targets)
    counts = {
        "memory_spaces": len(targets),
        "pages": len(pages),
        "segments": len(segments),
        "heat_samples": sum(len(s.get("heat_history", [])) for s in segments),
        "profile_versions": len(bundle["profile_versions"]),
        "knowledge": len(knowledge),
        "source_links": sum(len(k.get("source_page_ids", [])) for k in knowledge),
        "pinned": sum(bool(i.get("pinned")) for i in [*pages, *segments, *knowledge]),
        "locked": sum(bool(i.get("locked")) for i in [*segments, *knowledge, *bundle["profile_versions"]]),
    }
    skipped = {
        "chat_replies": sum(len(space.get("replies", [])) for space in bundle["memory"]),
        "knowledge_already_held": held,
    }
    assistants = {t.data["assistant"]["external_id"]: t.assistant.external_id for t in targets}
    return ImportResult(fingerprint, dry_run, counts=counts, assistants=assistants, skipped=skipped), targets


def _space_check(end_user: EndUser, assistant: Assistant) -> None:
    """Refuse memory that is paused (the user asked to keep nothing) or already holds pages (no merging)."""
    space = MemorySpace.objects.filter(end_user=end_user, assistant=assistant).first()
    if space is None:
        return
    if space.paused:
        raise ImportRefused(f"{end_user}'s memory with {assistant.external_id!r} is paused; resume it to import")
    held = Page.objects.filter(space=space).count()
    if held:
        raise ImportRefused(
            f"{end_user}'s memory with {assistant.external_id!r} already holds {held} pages; a bundle is imported "
            "only into empty memory"
        )


def _knowledge_new(end_user: EndUser, bundle: dict, targets: list[_Space]) -> tuple[list[dict], int]:
    """The bundle's facts the user does not hold yet (same kind, assistant and text), and how many they hold."""
    mapping = _knowledge_assistants(end_user, bundle, targets)
    held = set(KnowledgeEntry.objects.filter(end_user=end_user).values_list("kind", "assistant_id", "text_hash"))
    fresh = []
    for entry in bundle["knowledge"]:
        assistant = mapping.get(entry.get("assistant") or "")
        if (entry["kind"], assistant.pk if assistant else None, text_hash(entry["text"])) not in held:
            fresh.append(entry)
    return fresh, len(bundle["knowledge"]) - len(fresh)


# --- Writing ------------------------------------------------------------------------------------------------------


def _spaces_open(end_user: EndUser, targets: list[_Space]) -> list[_Space]:
    """Each target's memory space, created if new and locked in id order (the order every writer takes them)."""
    for target in targets:
        target.space = space_get_or_create(end_user=end_user, assistant=target.assistant)
    ids = sorted(t.opened.pk for t in targets)
    list(MemorySpace.objects.select_for_update().filter(pk__in=ids).order_by("id").values_list("pk", flat=True))
    for target in targets:
        target.opened.refresh_from_db()
        _space_check(end_user, target.assistant)  # again, under the lock
    return targets


def _import(end_user: EndUser, bundle: dict, targets: list[_Space], fingerprint: str, progress) -> None:
    """Every space, then the facts and the profile; `progress` hears 20 to 90 percent as the spaces are written."""
    page_ids: dict[int, Page] = {}
    for index, target in enumerate(targets, start=1):
        page_ids |= _space_import(target, fingerprint)
        progress(20 + 70 * index // len(targets))
    policy = personal_data_policy_or_default(tenant=end_user.tenant_id)
    _knowledge_import(end_user, bundle, targets, page_ids, policy, fingerprint)
    _profile_import(end_user, bundle, policy)


def _space_import(target: _Space, fingerprint: str) -> dict[int, Page]:
    """Segments, heat history and pages of one space, re-embedded; then the pipeline takes what is not placed."""
    space, data = target.opened, target.data
    segments = _segments_create(space, data["segments"])
    pages = _pages_create(space, data["pages"], segments, fingerprint)
    _segments_embed(segments, pages)
    overflow_space = MemorySpace.objects.get(pk=space.pk)  # not paused yet: overflow pages are placed, not dropped
    stm_evict_overflow(overflow_space)
    _pending_place(space)
    _promotions_queue(space)
    if data.get("memory_paused"):
        MemorySpace.objects.filter(pk=space.pk).update(paused=True)
    return pages


def _segments_create(space: MemorySpace, rows: list[dict]) -> dict[int, Segment]:
    segments = {
        row["id"]: Segment(
            space=space,
            summary=row["summary"],
            keywords=list(row.get("keywords", [])),
            n_visit=row["n_visit"],
            l_interaction=row["l_interaction"],
            last_touched_at=timestamp(row["last_touched_at"]),
            pinned=row.get("pinned", False),
            locked=row.get("locked", False),
        )
        for row in rows
    }
    Segment.objects.bulk_create(segments.values())
    _created_at_keep(Segment, segments, {r["id"]: r.get("created_at") for r in rows})
    HeatSample.objects.bulk_create(
        HeatSample(
            segment=segments[row["id"]],
            space=space,
            at=timestamp(sample["at"]),
            n_visit=sample["n_visit"],
            l_interaction=sample["l_interaction"],
            r_recency=sample["r_recency"],
            heat=sample["heat"],
            event=sample["event"],
        )
        for row in rows
        for sample in row.get("heat_history", [])
    )
    return segments


def _created_at_keep(model, by_bundle_id: dict, created: dict) -> None:
    """Give created rows the creation time the bundle names (auto_now_add set it to now)."""
    changed = []
    for bundle_id, value in created.items():
        if value:
            row = by_bundle_id[bundle_id]
            row.created_at = timestamp(value)
            changed.append(row)
    if changed:
        model.objects.bulk_update(changed, ["created_at"])


def _pages_create(space: MemorySpace, rows: list[dict], segments: dict[int, Segment], fingerprint: str):
    """Pages in the bundle's order, numbered after the space's; placed pages embedded again; chains relinked."""
    rows = sorted(rows, key=lambda row: row["seq"])
    first_seq = space.next_seq
    pages = {}
    for offset, row in enumerate(rows):
        segment = _referred(segments, row.get("segment_id"))
        pages[row["id"]] = Page(
            space=space,
            seq=first_seq + offset,
            user_message=row["user_message"],
            assistant_reply=row["assistant_reply"],
            at=timestamp(row["at"]),
            tier=row["tier"],
            segment=segment,
            chain_summary=row.get("chain_summary", ""),
            topic_summary=row.get("topic_summary", ""),
            keywords=list(row.get("keywords", [])),
            analysed=row.get("analysed", False),
            pinned=row.get("pinned", False),
            withheld=row.get("withheld", False),
            valid_to=_optional_timestamp(row.get("valid_to")),
            outdated_note=row.get("outdated_note", ""),
            source=PageSource.IMPORT,
            source_ref=_source_ref(row, fingerprint),
            source_meta={"bundle_page_id": row["id"], "source": row.get("source", "")} | _origin(row),
            reply_source=row.get("reply_source", ReplySource.ASSISTANT),
        )
    placed = [page for page in pages.values() if page.segment is not None]
    vectors = _pages_embed(placed)
    Page.objects.bulk_create(pages.values())
    page_passages_set(pages=placed, vectors=vectors, replace=False)  # the pages have their ids now
    MemorySpace.objects.filter(pk=space.pk).update(next_seq=first_seq + len(rows))
    _chains_link(rows, pages)
    return pages


def _source_ref(row: dict, fingerprint: str) -> str:
    """Where the page came from: another memory system's record (memory.importers), or the bundle."""
    origin = _origin(row).get("origin")
    if origin:
        return f"{IMPORTED_FROM}{origin['system']} ({origin['id']})"[:200]
    return f"bundle:{fingerprint[:16]}"


def _fact_source_ref(entry: dict, fingerprint: str) -> str:
    """Where an imported fact came from: another system's record, what its own bundle said, else this bundle; a fact
    learnt from the bundle's turns names those turns instead, as a fact learnt here does."""
    if _origin(entry):
        return _source_ref(entry, fingerprint)
    if entry.get("source_ref"):
        return entry["source_ref"][:200]
    return "" if entry.get("source_page_ids") else f"bundle:{fingerprint[:16]}"


def _origin(row: dict) -> dict:
    """A page's `origin` ({"system", "id"}, set by memory.importers) when it is well formed; else nothing."""
    origin = row.get("origin")
    if isinstance(origin, dict) and isinstance(origin.get("system"), str) and isinstance(origin.get("id"), str):
        return {"origin": {"system": origin["system"][:40], "id": origin["id"][:200]}}
    return {}


def _pages_embed(placed: list[Page]) -> list[PageVectors]:
    """A placed page's vector and its topic vector, as placement computes them (memory.services.updating); the
    vectors of the long pages' passages, for the caller to store once the pages have ids."""
    if not placed:
        return []
    embedder = embedder_for_store()
    vectors = page_vectors_embed(embedder=embedder, texts=[p.memory_text for p in placed])
    for page, embedded in zip(placed, vectors, strict=True):
        page.embedding = embedded.vector
        page.topic_embedding = None  # the page's own vector (Page.topic_vector), unless a summary's replaces it
    if get_steps().mode == "offline":
        return vectors  # offline, a page's topic vector is its own vector
    topical = [page for page in placed if page.topic_summary]
    for page, vector in zip(topical, embedder.embed([p.topic_summary for p in topical]), strict=True):
        page.topic_embedding = vector
    return vectors


def _referred(created: dict[int, T], bundle_id: int | None) -> T | None:
    """What a bundle row refers to by the bundle's id (None when it refers to nothing: no id, or null)."""
    return created.get(bundle_id) if bundle_id is not None else None


def _chains_link(rows: list[dict], pages: dict[int, Page]) -> None:
    """Each page's previous page and the head of its chain, with the new ids."""
    linked = []
    for row in rows:
        previous = _referred(pages, row.get("previous_page_id"))
        page = pages[row["id"]]
        if page.segment is None:
            continue  # not placed yet: placement links it
        page.prev_page = previous
        linked.append(page)
    for page in linked:
        head = page
        seen = {page.pk}
        while head.prev_page is not None and head.prev_page.pk not in seen:
            seen.add(head.prev_page.pk)
            head = head.prev_page
        page.chain_head = head
    if linked:
        Page.objects.bulk_update(linked, ["prev_page", "chain_head"])


def _segments_embed(segments: dict[int, Segment], pages: dict[int, Page]) -> None:
    """A segment's vector: the normalised mean of its pages' topic vectors (its summary's when it has none)."""
    members: dict[int, list[np.ndarray]] = {}
    for page in pages.values():
        if page.segment is not None:
            members.setdefault(page.segment.pk, []).append(np.asarray(page.topic_vector, dtype=np.float32))
    empty = [segment for segment in segments.values() if segment.pk not in members]
    if empty:
        for segment, vector in zip(empty, embedder_for_store().embed([s.summary for s in empty]), strict=True):
            segment.embedding = vector
    for segment in segments.values():
        if segment.pk in members:
            centroid = np.mean(members[segment.pk], axis=0)
            segment.embedding = centroid / (np.linalg.norm(centroid) or 1.0)
    if segments:
        Segment.objects.bulk_update(segments.values(), ["embedding"])


def _pending_place(space: MemorySpace) -> None:
    """Queue placement of the space's pending mid-term pages (the bundle's and the STM overflow's) after commit."""
    from memory.tasks import pages_place_task

    newest = Page.objects.waiting_placement().filter(space=space).order_by("-seq").first()
    if newest is not None:
        transaction.on_commit(lambda: pages_place_task.delay(newest.pk))


def _promotions_queue(space: MemorySpace) -> None:
    """Promote hot segments with pages not yet analysed, as placement would (the bundle's own analysis is kept)."""
    from memory.tasks import segment_promote_task

    hot = hot_segment_ids(space_id=space.pk, now=timezone.now())
    jobs_due(kind=JobKind.PROMOTION, target_ids=hot)
    for segment_id in hot:
        transaction.on_commit(partial(segment_promote_task.delay, segment_id))


def _optional_timestamp(value: str | None):
    return timestamp(value) if value else None


def imported_review_state(policy: PersonalDataPolicy, state: str | None, text: str) -> str:
    """A bundle item's review state here: a rejected one stays rejected (promotion never learns it again); an approved
    or pending one (or one from a bundle without review states) starts as this tenant's review mode says, since the
    exporting tenant may not have reviewed it."""
    return ReviewState.REJECTED if state == ReviewState.REJECTED else review_state_for(policy, text)


def _knowledge_import(
    end_user: EndUser,
    bundle: dict,
    targets: list[_Space],
    pages: dict[int, Page],
    policy: PersonalDataPolicy,
    fingerprint: str,
) -> None:
    """Facts the user does not hold yet, embedded again, with their source pages, creation times, review state and
    validity (the fact that superseded one is linked again among the new facts)."""
    mapping = _knowledge_assistants(end_user, bundle, targets)
    fresh, _ = _knowledge_new(end_user, bundle, targets)
    if not fresh:
        return
    vectors = embedder_for_store().embed([entry["text"] for entry in fresh])
    entries = {}
    for entry, vector in zip(fresh, vectors, strict=True):
        assistant = mapping.get(entry.get("assistant") or "")
        entries[entry["id"]] = KnowledgeEntry(
            end_user=end_user,
            assistant=assistant,
            kind=entry["kind"],
            text=entry["text"],
            text_hash=text_hash(entry["text"]),
            embedding=vector,
            pinned=entry.get("pinned", False),
            locked=entry.get("locked", False),
            review_state=imported_review_state(policy, entry.get("review_state"), entry["text"]),
            slot=entry.get("slot", ""),
            valid_from=_optional_timestamp(entry.get("valid_from")),
            valid_to=_optional_timestamp(entry.get("valid_to")),
            outdated_note=entry.get("outdated_note", ""),
            source_ref=_fact_source_ref(entry, fingerprint),
        )
    KnowledgeEntry.objects.bulk_create(entries.values())
    _created_at_keep(KnowledgeEntry, entries, {e["id"]: e.get("created_at") for e in fresh})
    learned = facts_learned(entries.values(), user=end_user.external_id, source="import")
    webhook_events_emit(tenant_id=end_user.tenant_id, events=learned)
    _supersessions_link(end_user, bundle["knowledge"], entries)
    links = KnowledgeEntry.source_pages.through
    links.objects.bulk_create(
        links(knowledgeentry_id=entries[entry["id"]].pk, page_id=pages[page_id].pk)
        for entry in fresh
        for page_id in entry.get("source_page_ids", [])
    )


def _supersessions_link(end_user: EndUser, knowledge: list[dict], created: dict[int, KnowledgeEntry]) -> None:
    """Each new fact the bundle says was superseded points at its replacement: the replacing fact imported with
    it, or the same fact the user already held (skipped as held)."""
    by_id = {entry["id"]: entry for entry in knowledge}
    linked = []
    for bundle_id, fact in created.items():
        replacing = by_id[bundle_id].get("superseded_by")
        if replacing is None:
            continue
        fact.superseded_by = created.get(replacing) or _held_fact(end_user, fact, by_id[replacing]["text"])
        linked.append(fact)
    if linked:
        KnowledgeEntry.objects.bulk_update(linked, ["superseded_by"])


def _held_fact(end_user: EndUser, like: KnowledgeEntry, text: str) -> KnowledgeEntry | None:
    store = KnowledgeEntry.objects.filter(end_user=end_user, kind=like.kind, assistant=like.assistant)
    return store.filter(text_hash=text_hash(text)).without_vectors().first()


def _profile_import(end_user: EndUser, bundle: dict, policy: PersonalDataPolicy) -> None:
    """Profile history in the bundle's order, numbered after the user's own versions (the last approved one is
    current). A version not rejected takes this tenant's review mode and loses the text of the bundle's rejected
    facts (withheld as stale when it paraphrases one)."""
    versions = bundle["profile_versions"]
    if not versions:
        return
    last = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").values_list("number", flat=True)
    start = (last.first() or 0) + 1
    rows = sorted(versions, key=lambda v: v["number"])
    rejected = [k["text"] for k in bundle["knowledge"] if k.get("review_state") == ReviewState.REJECTED]
    created = {
        row["number"]: _profile_version(end_user, start + offset, row, policy, rejected)
        for offset, row in enumerate(rows)
    }
    ProfileVersion.objects.bulk_create(created.values())
    _created_at_keep(ProfileVersion, created, {r["number"]: r.get("created_at") for r in rows})


def _profile_version(
    end_user: EndUser, number: int, row: dict, policy: PersonalDataPolicy, rejected: list[str]
) -> ProfileVersion:
    state = imported_review_state(policy, row.get("review_state"), row["text"])
    withdrawal = profile_without(row["text"], rejected) if rejected and state != ReviewState.REJECTED else None
    return ProfileVersion(
        end_user=end_user,
        number=number,
        text=withdrawal.text if withdrawal else row["text"],
        author=row.get("author", "system"),
        locked=row.get("locked", False),
        review_state=state,
        stale=bool(withdrawal and withdrawal.needs_rederiving),
    )


class ImportTakenOver(Exception):
    """Another worker took the background import over (this one's lease ran out): this run must store nothing."""


def _record(
    end_user: EndUser, fingerprint: str, assistant: str, counts: dict, actor: Actor, job: MemoryImport | None
) -> MemoryImport:
    """The import's record: a new done row, or the background `job` turned into it (fenced by its attempt)."""
    if job is not None:
        done = {"status": ImportStatus.DONE, "bundle": None, "fingerprint": fingerprint, "counts": counts}
        running = MemoryImport.objects.filter(pk=job.pk, status=ImportStatus.RUNNING, attempts=job.attempts)
        if not running.update(**done, progress=100, lease_until=None, imported_at=timezone.now()):
            raise ImportTakenOver(f"import {job.pk} was taken over by another worker")
        return MemoryImport.objects.get(pk=job.pk)
    return MemoryImport.objects.create(
        tenant_id=end_user.tenant_id,
        end_user=end_user,
        fingerprint=fingerprint,
        status=ImportStatus.DONE,
        assistant_external_id=assistant,
        counts=counts,
        requested_by=actor.label[:200],
        imported_at=timezone.now(),
    )
