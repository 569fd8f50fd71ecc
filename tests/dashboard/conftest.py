"""Builders for console tests: real memory recorded, placed and promoted through the engine's services."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.models import Assistant, EndUser, MemorySpace, Segment
from memory.services.promotion import segment_promote
from memory.services.turns import space_get_or_create, turn_record

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
HX = {"HTTP_HX_REQUEST": "true"}

TOPICS = [
    [
        ("I am planning a trip to Lisbon in May and I love walking through old towns.", "Lisbon suits walkers."),
        ("I am vegetarian, so I need restaurants in Lisbon with vegetarian food.", "Lisbon has vegetarian places."),
        ("I want to visit the Alfama district in Lisbon and ride the old tram.", "Tram 28 crosses Alfama."),
    ],
    [
        ("I started baking sourdough bread and my starter is called Bubbles.", "Sourdough takes patience."),
        ("My sourdough bread came out flat, the starter Bubbles seems weak.", "Feed the starter twice daily."),
        ("I bake sourdough bread every Sunday morning for my family.", "Sunday baking sounds lovely."),
    ],
    [
        ("I signed up for a half marathon in October and I run three times a week.", "Build mileage slowly."),
        ("My left knee aches after long runs when I train for the marathon.", "Rest the knee, add strength work."),
        ("I run with my neighbour Tom on Saturday mornings along the river.", "Running partners help."),
    ],
    [
        ("I grow tomatoes and courgettes in raised beds in my back garden.", "Raised beds drain well."),
        ("My dog Biscuit digs up the garden beds and eats the courgettes.", "Netting keeps dogs out."),
        ("I built a fence around the tomato beds to keep Biscuit out of the garden.", "A fence should work."),
    ],
]


def memory_record(
    end_user: EndUser,
    assistant: Assistant,
    capture,
    *,
    rounds: int = 1,
    promote: bool = True,
    start: datetime = T0,
) -> MemorySpace:
    """Record `rounds` passes over the topics as turns (placed into segments on commit), then promote every segment.

    `capture` is pytest-django's django_capture_on_commit_callbacks, so the updating tasks run as they would after
    a real commit.
    """
    turns = [turn for _ in range(rounds) for topic in TOPICS for turn in topic]
    with capture(execute=True):
        for i, (message, reply) in enumerate(turns):
            turn_record(
                end_user=end_user,
                assistant=assistant,
                user_message=message,
                assistant_reply=reply,
                at=start + timedelta(minutes=3 * i),
            )
    space = space_get_or_create(end_user=end_user, assistant=assistant)
    if promote:
        for segment in Segment.objects.filter(space=space):
            Segment.objects.filter(pk=segment.pk).update(l_interaction=9)  # hot enough to promote
            segment_promote(segment_id=segment.pk)
    return space


@pytest.fixture
def alice_space(alice, assistant, django_capture_on_commit_callbacks) -> MemorySpace:
    """Alice's memory with Ava: STM full, several segments, a profile and knowledge."""
    return memory_record(alice, assistant, django_capture_on_commit_callbacks)


@pytest.fixture
def stranger_space(stranger, django_capture_on_commit_callbacks) -> MemorySpace:
    """Memory of the other tenant's end user (its ids must be 404 from Acme's console)."""
    assistant = stranger.tenant.assistants.get(external_id="ava")
    return memory_record(stranger, assistant, django_capture_on_commit_callbacks)


@pytest.fixture
def other_operator(other_tenant):
    """A supervisor and dpo of Globex only."""
    from memory.models import Role
    from memory.services.tenancy import operator_create
    from tests.conftest import PASSWORD

    return operator_create(username="admin-of-globex", password=PASSWORD, tenant=other_tenant, role=Role.ADMIN)
