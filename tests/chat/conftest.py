"""Builders for chat tests: memory written straight into the tiers, and an LLM that answers from a script."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta

import pytest

from memory.llm import use_llm
from memory.models import EndUser, KnowledgeEntry, MemorySpace, Page, ProfileVersion, Segment
from memory.models.tiers import KnowledgeKind, Tier
from memory.services.embedding_state import embedder_for_store
from memory.services.promotion import text_hash
from memory.services.turns import space_get_or_create, turn_record
from tests.fakes import ScriptedLLM

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _vector(text: str):
    return embedder_for_store().embed([text])[0]


def topic(space: MemorySpace, summary: str, messages: list[str], *, at: datetime = T0, **flags) -> Segment:
    """A mid-term segment about `summary` holding one page per message (replies are "Noted.")."""
    segment = Segment.objects.create(
        space=space,
        summary=summary,
        keywords=summary.lower().split()[:8],
        embedding=_vector(summary),
        last_touched_at=at,
        l_interaction=len(messages),
        **flags,
    )
    for offset, message in enumerate(messages):
        seq = MemorySpace.objects.get(pk=space.pk).next_seq
        Page.objects.create(
            space=space,
            seq=seq,
            user_message=message,
            assistant_reply="Noted.",
            at=at + timedelta(minutes=offset),
            tier=Tier.MID_TERM,
            segment=segment,
            embedding=_vector(message),
            chain_summary=f"The user talked about {summary}.",
        )
        MemorySpace.objects.filter(pk=space.pk).update(next_seq=seq + 1)
    return segment


def fact(end_user: EndUser, text: str, *, assistant=None, **flags) -> KnowledgeEntry:
    """A knowledge entry: about the user, or (with `assistant`) about what that assistant did for them."""
    kind = KnowledgeKind.ASSISTANT if assistant else KnowledgeKind.USER
    return KnowledgeEntry.objects.create(
        end_user=end_user,
        assistant=assistant,
        kind=kind,
        text=text,
        text_hash=text_hash(text),
        embedding=_vector(text),
        **flags,
    )


def profile(end_user: EndUser, text: str) -> ProfileVersion:
    current = ProfileVersion.objects.filter(end_user=end_user).order_by("-number").first()
    return ProfileVersion.objects.create(end_user=end_user, number=current.number + 1 if current else 1, text=text)


def said(space: MemorySpace, message: str, reply: str = "Noted.", at: datetime | None = None) -> Page:
    """A turn recorded into short-term memory through the engine."""
    return turn_record(
        end_user=space.end_user, assistant=space.assistant, user_message=message, assistant_reply=reply, at=at
    ).page


@pytest.fixture
def space(alice, assistant) -> MemorySpace:
    return space_get_or_create(end_user=alice, assistant=assistant)


@pytest.fixture
def llm(settings) -> Callable[..., ScriptedLLM]:
    """`llm("reply", LLMError(...))` puts a scripted LLM at the seam and turns LLM mode on."""
    settings.LLM_BASE_URL = "http://llm.test/v1"
    with ExitStack() as stack:

        def script(*replies) -> ScriptedLLM:
            fake = ScriptedLLM(list(replies))
            stack.enter_context(use_llm(fake))
            return fake

        yield script


@pytest.fixture
def offline(settings) -> None:
    settings.LLM_BASE_URL = ""
