"""Chat tests' seams: Alice's memory space with Ava, an LLM that answers from a script, and offline mode."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack

import pytest

from memory.llm import use_llm
from memory.models import MemorySpace
from tests import builders
from tests.fakes import ScriptedLLM


@pytest.fixture
def space(alice, assistant) -> MemorySpace:
    return builders.space_of(alice, assistant)


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
