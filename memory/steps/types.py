"""The types the memory steps exchange: what a step reads, what it returns, what it spent, how it fails.

The dispatcher (memory.steps) and both implementations (memory.steps.offline_steps, memory.steps.model_steps)
import these, so none of them imports another for its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class TurnText:
    """A page as the steps see it: two texts and a time; the reply is empty when the system wrote it (no model)."""

    user_message: str
    assistant_reply: str
    at: datetime

    @property
    def text(self) -> str:
        if not self.assistant_reply:
            return f"User: {self.user_message}"
        return f"User: {self.user_message}\nAssistant: {self.assistant_reply}"


@dataclass(frozen=True)
class ChainTopic:
    """Result of placing one evicted page: dialogue continuity, the chain's summary, the page's topic."""

    continues: bool
    chain_summary: str
    topic_summary: str
    keywords: list[str]


@dataclass(frozen=True)
class KnownFact:
    """A current fact about the user that a promotion shows the model, so it can say which one a new fact replaces."""

    id: int
    text: str


@dataclass(frozen=True)
class Facts:
    """Short, dated, self-contained facts about the user and about what the assistant did or committed to.

    `replaces` maps a user fact's text to the id of the known fact it replaces (the model's UPDATE); a fact not in
    it is new (ADD). Offline it stays empty: the promotion service applies memory.validity's rule instead.
    """

    user: list[str] = field(default_factory=list)
    assistant: list[str] = field(default_factory=list)
    replaces: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PromotionFindings:
    """What one promotion learns from a segment's pages: the updated profile and the facts, from one step."""

    profile: str
    facts: Facts


@dataclass
class Usage:
    """LLM calls and tokens one step used (all zero offline)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


class StepFailed(Exception):
    """A step could not produce a valid result (LLM down, timed out, or answered garbage twice).

    Carries the usage spent so the failure can be recorded; nothing of the step may be stored as memory.
    """

    def __init__(self, message: str, usage: Usage | None = None, retryable: bool = True) -> None:
        super().__init__(message)
        self.usage = usage or Usage()
        self.retryable = retryable


class MemorySteps(Protocol):
    """One way of doing the memory steps: offline heuristics or an LLM."""

    # Read-only, so that steps which wrap others (personal_data.MaskedSteps) can report the inner steps' own.
    @property
    def mode(self) -> str: ...  # "offline" or "llm"

    @property
    def usage(self) -> Usage: ...  # accumulated over this object's calls

    def chain_and_topic(
        self, *, previous: TurnText | None, previous_chain_summary: str, page: TurnText, similarity: float | None
    ) -> ChainTopic:
        """Decide continuity with the previous evicted page, roll the chain summary, summarise the topic.

        `similarity` is the cosine between the two pages' embeddings (None without a previous page).
        """
        ...

    def chain_and_topics(
        self,
        *,
        previous: TurnText | None,
        previous_chain_summary: str,
        pages: list[TurnText],
        similarities: list[float | None],
    ) -> list[ChainTopic]:
        """`chain_and_topic` for several pages that left STM together, in order, each continuing from the one before.

        `similarities[i]` is the cosine between page i and the page before it (None for the first without a
        previous page). Returns one ChainTopic per page, in order: the same as asking one page at a time.
        """
        ...

    def profile_update(self, *, profile: str, pages: list[TurnText]) -> str:
        """The updated profile text given the current one and new pages."""
        ...

    def promotion_analyse(
        self, *, profile: str, pages: list[TurnText], known: tuple[KnownFact, ...] = ()
    ) -> PromotionFindings:
        """`profile_update` and `knowledge_extract` of the same pages as one step (one model call)."""
        ...

    def knowledge_extract(self, *, pages: list[TurnText], known: tuple[KnownFact, ...] = ()) -> Facts:
        """Facts about the user and the assistant found in the pages; with `known`, which of those a new fact
        replaces."""
        ...
