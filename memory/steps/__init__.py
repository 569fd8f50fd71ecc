"""The memory steps that need language understanding, as one interface with two implementations.

`OfflineSteps` (memory.steps.offline_steps) does each step with deterministic heuristics and no network; `LLMSteps`
(memory.steps.model_steps) asks an OpenAI-compatible model through the one LLM seam (memory.llm). Services call
`get_steps()` and receive plain dataclasses (memory.steps.types) back, so they never know which one ran.
"""

from __future__ import annotations

from django.conf import settings

from memory.steps.model_steps import LLMSteps
from memory.steps.offline_steps import OfflineSteps
from memory.steps.types import MemorySteps


def llm_configured() -> bool:
    """Whether an LLM endpoint is configured (LLM_BASE_URL is set)."""
    return bool(settings.LLM_BASE_URL)


def get_steps() -> MemorySteps:
    """A fresh steps object (its usage starts at zero): LLM-backed when LLM_BASE_URL is set, else offline."""
    if llm_configured():
        return LLMSteps()
    return OfflineSteps()
