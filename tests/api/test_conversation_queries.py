"""The calls an agent makes on every message read their parties in one statement (the assistant, the end user, their
memory space and the tenant's personal data policy: memory.services.conversation.conversation_for), as the proxy
does, and cost the same queries however much memory the user holds."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests import builders


def queries(api, url: str, body: dict) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = api.post(url, body, format="json")
    assert response.status_code in (200, 201), response.content
    return len(captured)


def grow(end_user, assistant, n: int) -> None:
    space = builders.space_of(end_user, assistant)
    for i in range(n):
        page = builders.page(space, user_message=f"My beagle learnt trick {i}.", assistant_reply="Good dog.")
        builders.knowledge(end_user, text=f"Alice's beagle knows trick {i}.", source_pages=[page])


def turn(n: int) -> dict:
    return {"user": "alice", "assistant": "ava", "user_message": f"Hello {n}", "assistant_reply": "Hi"}


def test_recording_a_turn_for_a_known_user_costs_a_bounded_number_of_queries(api, memory, alice, assistant):
    api.post("/api/v1/turns/", turn(0), format="json")  # warm: the token's last_used_at, the user's first turn
    few = queries(api, "/api/v1/turns/", turn(1))
    grow(alice, assistant, 8)

    assert queries(api, "/api/v1/turns/", turn(2)) == few
    # the token, the parties, then the turn: the user's lock, the page number, the page and STM's overflow (9 when
    # the parties took four lookups)
    assert few <= 6


def test_a_chat_reply_for_a_known_user_costs_a_bounded_number_of_queries(api, memory, alice, assistant):
    def chat(n: int) -> dict:
        return {"user": "alice", "assistant": "ava", "message": f"What tricks does my beagle know, {n}?"}

    api.post("/api/v1/chat/", chat(0), format="json")  # warm
    few = queries(api, "/api/v1/chat/", chat(1))
    grow(alice, assistant, 8)

    assert queries(api, "/api/v1/chat/", chat(2)) == few
    assert few <= 17  # 20 when the parties took four lookups
