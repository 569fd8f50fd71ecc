"""Builders for engine tests: a memory space and turns recorded through the real services."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.models import Assistant, EndUser, MemorySpace, Tenant
from memory.services.turns import space_get_or_create, turn_record

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def make_space(slug: str = "acme", user: str = "ann") -> MemorySpace:
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
    assistant, _ = Assistant.objects.get_or_create(tenant=tenant, external_id="ava", defaults={"name": "Ava"})
    end_user, _ = EndUser.objects.get_or_create(tenant=tenant, external_id=user)
    return space_get_or_create(end_user=end_user, assistant=assistant)


def record(space: MemorySpace, user_message: str, reply: str = "Noted.", at: datetime | None = None):
    return turn_record(
        end_user=space.end_user,
        assistant=space.assistant,
        user_message=user_message,
        assistant_reply=reply,
        at=at,
    )


def record_many(space: MemorySpace, messages: list[str], start: datetime = T0, step: timedelta = timedelta(minutes=1)):
    return [record(space, m, at=start + i * step) for i, m in enumerate(messages)]


@pytest.fixture
def space(db) -> MemorySpace:
    return make_space()


@pytest.fixture
def other_space(db) -> MemorySpace:
    return make_space(slug="globex", user="gus")
