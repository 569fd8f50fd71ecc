"""Engine tests' spaces: Ann's memory with Ava in Acme, and Gus's in Globex (built by tests/builders.py)."""

from __future__ import annotations

import pytest

from memory.models import MemorySpace
from tests import builders


@pytest.fixture
def space(db) -> MemorySpace:
    return builders.space_of(builders.end_user())


@pytest.fixture
def other_space(db) -> MemorySpace:
    return builders.space_of(builders.end_user(tenant="globex", external_id="gus"))
