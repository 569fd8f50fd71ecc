"""The context preview: the prompt the chat would send for a question, section by section, built by the chat's own
prompt builder from a retrieval that records no visit."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from chat.prompt import SECTIONS, MemoryItem, Prompt, estimate_tokens, prompt_build
from memory.models import MemorySpace
from memory.models.tiers import PageSource
from memory.retrieval.result import RetrievalResult
from memory.selectors.console import context_retrieval
from memory.services.personal_data import prompt_redactor


@dataclass(frozen=True)
class PreviewSection:
    title: str
    items: list[MemoryItem | str]
    empty: str = ""


@dataclass
class Preview:
    retrieval: RetrievalResult
    prompt: Prompt
    sections: list[PreviewSection] = field(default_factory=list)

    @property
    def found_by(self) -> dict[int, str]:
        """Page id → why retrieval found it ("words 'biscuit', vector 0.71, date range May 2023")."""
        return {scored.page.id: scored.explanation() for scored in self.retrieval.ranked}

    @property
    def provenance(self) -> dict[tuple[str, int], str]:
        """(kind, id) → where an item came from when it was not said in this chat ("imported from mem0 (m-1)")."""
        found = self.retrieval
        pages = [*found.short_term, *found.pinned_pages, *(scored.page for scored in found.ranked)]
        facts = [*found.pinned_knowledge, *(s.entry for s in [*found.user_knowledge, *found.assistant_knowledge])]
        came = {("page", page.id): page.source_ref for page in pages if page.source == PageSource.IMPORT}
        return came | {("knowledge", fact.id): fact.source_ref for fact in facts if fact.source_ref}

    @property
    def dropped_tokens(self) -> int:
        return sum(estimate_tokens(item.text) for item in self.prompt.dropped)


EMPTY = {
    "profile": "No profile yet.",
    "knowledge": "No facts matched, and none is pinned.",
    "earlier": "No earlier conversation matched.",
    "recent": "Short-term memory is empty.",
}


def preview_build(*, space: MemorySpace, query: str, now: datetime) -> Preview:
    """The prompt for `query` as the chat would build it now, within CHAT_PROMPT_TOKEN_BUDGET (the tenant's
    mask-in-prompts personal data masked, as the model would get it)."""
    mask = prompt_redactor(tenant=space.tenant_id)
    retrieval = context_retrieval(space=space, query=mask(query))
    prompt = prompt_build(
        assistant=space.assistant,
        retrieval=retrieval,
        message=query,
        now=now,
        budget=settings.CHAT_PROMPT_TOKEN_BUDGET,
        mask=mask if mask else None,
    )
    preview = Preview(retrieval=retrieval, prompt=prompt)
    preview.sections.append(PreviewSection("Instructions and persona", [prompt.instructions]))
    for key, heading in SECTIONS.items():
        items = [item for item in prompt.kept if item.section == key]
        preview.sections.append(PreviewSection(heading.lstrip("# "), items, EMPTY[key]))
    preview.sections.append(PreviewSection("The user's message", [query]))
    return preview
