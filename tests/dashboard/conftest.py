"""Console tests' memory: recorded, placed and promoted through the engine's services (tests/builders.py)."""

from __future__ import annotations

import pytest

from memory.models import MemorySpace
from tests import builders

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def alice_space(alice, assistant, django_capture_on_commit_callbacks) -> MemorySpace:
    """Alice's memory with Ava: STM full, several segments, a profile and knowledge."""
    return builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks)


@pytest.fixture
def stranger_space(stranger, django_capture_on_commit_callbacks) -> MemorySpace:
    """Memory of the other tenant's end user (its ids must be 404 from Acme's console)."""
    assistant = stranger.tenant.assistants.get(external_id="ava")
    return builders.conversations(stranger, assistant, capture=django_capture_on_commit_callbacks)


@pytest.fixture
def other_operator(other_tenant):
    """A supervisor and dpo of Globex only."""
    from memory.models import Role
    from memory.services.tenancy import operator_create
    from tests.conftest import PASSWORD

    return operator_create(username="admin-of-globex", password=PASSWORD, tenant=other_tenant, role=Role.ADMIN)
