"""Reads of what is held about one end user: every tier of their memory as an export (access, portability), the
rows an erasure deletes and their counts (its dry run), and the reference an erasure receipt names them by.

The erasure itself (memory.services.gdpr) deletes the rows `end_user_rows` lists, so the dry run counts what goes.
"""

from __future__ import annotations

import hashlib

from django.contrib.sessions.models import Session
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from memory.models import (
    AuditEntry,
    ChatReply,
    EndUser,
    ExportJob,
    HeatSample,
    IdempotentRequest,
    KnowledgeEntry,
    LegalHold,
    MemoryEvent,
    MemoryImport,
    MemorySpace,
    Page,
    PagePassage,
    ProfileVersion,
    Segment,
)

EXPORT_FORMAT = "memoryos-export/1"
# The version of export.json's JSON schema (memory/schemas/memory-bundle-1.schema.json, docs/memory-bundle.md):
# raised when a field changes meaning or disappears; new optional fields keep it.
EXPORT_SCHEMA_VERSION = 1


def _iso(value) -> str | None:
    return value.isoformat() if value else None


_PASSAGES = Prefetch("passages", queryset=PagePassage.objects.order_by("start"))


def _page(page: Page) -> dict:
    return {
        "id": page.id,
        "seq": page.seq,
        "at": _iso(page.at),
        "tier": page.tier,
        "user_message": page.user_message,
        "assistant_reply": page.assistant_reply,
        "segment_id": page.segment_id,
        "previous_page_id": page.prev_page_id,
        "chain_summary": page.chain_summary,
        "topic_summary": page.topic_summary,
        "keywords": page.keywords,
        "analysed": page.analysed,
        "pinned": page.pinned,
        "withheld": page.withheld,
        "valid_to": _iso(page.valid_to),
        "outdated_note": page.outdated_note,
        "source": page.source,
        "reply_source": page.reply_source,
        "embedding": None if page.embedding is None else [float(x) for x in page.embedding],
        "passages": [_passage(passage) for passage in page.passages.all()],
    }


def _passage(passage: PagePassage) -> dict:
    """Where a long page's passage lies in "User: <message>\nAssistant: <reply>", and its vector to four decimals
    (a unit vector's coordinates move the cosine by at most 0.001 so): a 50,000-character page has about 70
    passages, and their full-precision vectors would make it ten times its size in an export."""
    return {"start": passage.start, "end": passage.end, "embedding": [round(float(x), 4) for x in passage.embedding]}


def _segment(segment: Segment, samples: list[HeatSample]) -> dict:
    return {
        "id": segment.id,
        "summary": segment.summary,
        "keywords": segment.keywords,
        "n_visit": segment.n_visit,
        "l_interaction": segment.l_interaction,
        "last_touched_at": _iso(segment.last_touched_at),
        "pinned": segment.pinned,
        "locked": segment.locked,
        "created_at": _iso(segment.created_at),
        "heat_history": [
            {
                "at": _iso(s.at),
                "event": s.event,
                "n_visit": s.n_visit,
                "l_interaction": s.l_interaction,
                "r_recency": s.r_recency,
                "heat": s.heat,
            }
            for s in samples
        ],
    }


def _space(space: MemorySpace) -> dict:
    samples: dict[int, list[HeatSample]] = {}
    for sample in HeatSample.objects.filter(space=space).order_by("at", "id"):
        samples.setdefault(sample.segment_id, []).append(sample)
    return {
        "assistant": {"external_id": space.assistant.external_id, "name": space.assistant.name},
        "memory_paused": space.paused,
        "pages": [_page(p) for p in Page.objects.filter(space=space).prefetch_related(_PASSAGES).order_by("seq")],
        "segments": [_segment(s, samples.get(s.id, [])) for s in Segment.objects.filter(space=space).order_by("id")],
        "replies": [
            {
                "at": _iso(r.created_at),
                "status": r.status,
                "user_message": r.user_message,
                "page_id": r.page_id,
                "memory_used": r.memory_used,
                "llm_calls": r.llm_calls,
            }
            for r in ChatReply.objects.filter(space=space).order_by("created_at")
        ],
    }


def user_export_data(*, end_user: EndUser) -> dict:
    """Every tier of one end user's memory, with heat history, profile versions, knowledge, pins and audit entries.

    Read-only; JSON-ready. Embeddings are included (they are personal data too).
    """
    spaces = MemorySpace.objects.filter(end_user=end_user).select_related("assistant").order_by("id")
    knowledge = KnowledgeEntry.objects.filter(end_user=end_user).select_related("assistant").order_by("id")
    return {
        "format": EXPORT_FORMAT,
        "schema_version": EXPORT_SCHEMA_VERSION,
        "generated_at": _iso(timezone.now()),
        "end_user": {
            "external_id": end_user.external_id,
            "display_name": end_user.display_name,
            "email": end_user.email,
            "tenant": end_user.tenant.slug,
            "created_at": _iso(end_user.created_at),
            "last_active_at": _iso(end_user.last_active_at),
        },
        "memory": [_space(space) for space in spaces],
        "profile_versions": [
            {
                "number": v.number,
                "text": v.text,
                "author": v.author,
                "locked": v.locked,
                "review_state": v.review_state,
                "created_at": _iso(v.created_at),
            }
            for v in ProfileVersion.objects.filter(end_user=end_user).order_by("number")
        ],
        "knowledge": [
            {
                "id": k.id,
                "kind": k.kind,
                "assistant": k.assistant.external_id if k.assistant else None,
                "text": k.text,
                "pinned": k.pinned,
                "locked": k.locked,
                "review_state": k.review_state,
                "slot": k.slot,
                "valid_from": _iso(k.valid_from),
                "valid_to": _iso(k.valid_to),
                "superseded_by": k.superseded_by_id,  # another fact of this bundle (every fact of the user is in it)
                "outdated_note": k.outdated_note,
                "source_ref": k.source_ref,
                "created_at": _iso(k.created_at),
                "source_page_ids": list(k.source_pages.values_list("id", flat=True)),
            }
            for k in knowledge
        ],
        "audit": [
            {
                "at": _iso(a.created_at),
                "actor": a.actor_kind,
                "actor_label": a.actor_label,
                "action": a.action,
                "target": a.target_type,
                "reason": a.reason,
                "erased": a.erased,
            }
            for a in AuditEntry.objects.filter(tenant_id=end_user.tenant_id, subject_id=end_user.pk).order_by("seq")
        ],
    }


# --- Erasure's rows -----------------------------------------------------------------------------------------


def end_user_rows(*, end_user: EndUser) -> dict[str, QuerySet]:
    """Every row about the end user, by table, in an order that deletes cleanly."""
    spaces = MemorySpace.objects.filter(end_user=end_user)
    return {
        "memory_chatreply": ChatReply.objects.filter(space__in=spaces),
        "memory_heatsample": HeatSample.objects.filter(space__in=spaces),
        "memory_knowledgeentry": KnowledgeEntry.objects.filter(end_user=end_user),
        "memory_profileversion": ProfileVersion.objects.filter(end_user=end_user),
        "memory_pagepassage": PagePassage.objects.filter(space__in=spaces),  # (pages' deletes would take them too)
        "memory_page": Page.objects.filter(space__in=spaces),
        "memory_segment": Segment.objects.filter(space__in=spaces),
        "memory_memoryevent": MemoryEvent.objects.filter(end_user=end_user),
        "memory_idempotentrequest": IdempotentRequest.objects.filter(end_user=end_user),
        "memory_exportjob": ExportJob.objects.filter(end_user=end_user),
        "memory_memoryimport": MemoryImport.objects.filter(end_user=end_user),
        "memory_memoryspace": spaces,
        "memory_legalhold": LegalHold.objects.filter(end_user=end_user),  # released ones: an active one refuses
        "memory_enduser": EndUser.objects.filter(pk=end_user.pk),
    }


def account_live_sessions(*, user_id: int) -> list[str]:
    """Live sessions of a login account (expired ones are unusable and purged by clearsessions)."""
    live = Session.objects.filter(expire_date__gt=timezone.now())
    return [s.session_key for s in live.iterator() if s.get_decoded().get("_auth_user_id") == str(user_id)]


# Rows an erasure keeps, emptied of their content: listed in the counts, never among the rows erased.
KEPT_TOMBSTONES = "memory_auditentry (tombstoned)"


def erased_total(counts: dict) -> int:
    """The rows an erasure deleted (or would delete): every count but the audit entries kept as tombstones."""
    return sum(n for table, n in (counts or {}).items() if table != KEPT_TOMBSTONES and isinstance(n, int))


def erasure_counts(*, end_user: EndUser) -> dict[str, int]:
    """Dry run: how many rows each table holds about the end user (audit entries are tombstoned, not deleted)."""
    counts = {table: qs.count() for table, qs in end_user_rows(end_user=end_user).items()}
    counts[KEPT_TOMBSTONES] = AuditEntry.objects.filter(
        tenant_id=end_user.tenant_id, subject_id=end_user.pk, erased=False
    ).count()
    if end_user.account_id:
        counts["auth_user"] = 1
        counts["django_session"] = len(account_live_sessions(user_id=end_user.account_id))
    return counts


def subject_reference(end_user: EndUser) -> str:
    """A stable, unreadable reference to the end user: lets a DPO prove which request a receipt answers."""
    return subject_reference_of(tenant_id=end_user.tenant_id, external_id=end_user.external_id)


def subject_reference_of(*, tenant_id: int, external_id: str) -> str:
    return hashlib.sha256(f"{tenant_id}:{external_id}".encode()).hexdigest()
