"""Memory bundles for the import tests: a user's memory exported as export.json would hold it, and a snapshot of
memory that compares across installations (texts, times, pins, locks and provenance; never ids)."""

from __future__ import annotations

import json

from memory.models import EndUser, HeatSample, KnowledgeEntry, Page, ProfileVersion, Segment
from memory.selectors.gdpr import user_export_data
from memory.services.audit import Actor
from memory.services.governance import memory_flag_set
from tests import builders

DPO = Actor("operator", "9", "dana")


def bundle_of(end_user: EndUser) -> dict:
    """The user's export.json, as a file would give it back."""
    return json.loads(json.dumps(user_export_data(end_user=end_user), ensure_ascii=False))


def bundle_bytes(end_user: EndUser) -> bytes:
    return json.dumps(user_export_data(end_user=end_user), ensure_ascii=False).encode()


def governed_memory(end_user, assistant, capture) -> None:
    """Alice's conversations placed and promoted, with a pinned page, a pinned and a locked segment, a pinned and a
    locked fact, and a locked profile version: everything an import must keep."""
    space = builders.conversations(end_user, assistant, capture=capture)
    segments = list(Segment.objects.filter(space=space).order_by("id"))
    page = Page.objects.filter(space=space, tier="mtm").order_by("seq").first()
    facts = list(KnowledgeEntry.objects.filter(end_user=end_user).order_by("id"))
    for item, flag in [(page, "pinned"), (segments[0], "pinned"), (segments[1], "locked")]:
        memory_flag_set(item=item, flag=flag, value=True, actor=DPO, reason="keep")
    memory_flag_set(item=facts[0], flag="pinned", value=True, actor=DPO, reason="keep")
    memory_flag_set(item=facts[-1], flag="locked", value=True, actor=DPO, reason="keep")
    current = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()
    memory_flag_set(item=current, flag="locked", value=True, actor=DPO, reason="keep")


def memory_of(end_user: EndUser) -> dict:
    """Everything an import must keep, without ids: pages, segments, heat history, facts with sources, profile."""
    pages = Page.objects.filter(space__end_user=end_user).select_related("segment", "prev_page", "space__assistant")

    def page_key(page: Page | None):
        return None if page is None else (page.user_message, page.at.isoformat())

    return {
        "pages": [
            (
                p.space.assistant.external_id,
                p.user_message,
                p.assistant_reply,
                p.at.isoformat(),
                p.tier,
                p.pinned,
                p.analysed,
                p.reply_source,
                p.segment.summary if p.segment else None,
                page_key(p.prev_page),
            )
            for p in pages.order_by("space__assistant__external_id", "seq")
        ],
        "segments": sorted(
            (
                s.summary,
                tuple(s.keywords),
                s.n_visit,
                s.l_interaction,
                s.last_touched_at.isoformat(),
                s.pinned,
                s.locked,
                s.created_at.isoformat(),
                HeatSample.objects.filter(segment=s).count(),
            )
            for s in Segment.objects.filter(space__end_user=end_user)
        ),
        "knowledge": sorted(
            (
                k.kind,
                k.assistant.external_id if k.assistant else None,
                k.text,
                k.pinned,
                k.locked,
                k.created_at.isoformat(),
                tuple(sorted(page_key(p) for p in k.source_pages.all())),
            )
            for k in KnowledgeEntry.objects.filter(end_user=end_user).select_related("assistant")
        ),
        "profile": [
            (v.text, v.author, v.locked, v.created_at.isoformat())
            for v in ProfileVersion.objects.filter(end_user=end_user).order_by("number")
        ],
    }
