"""Recording turns: STM is a FIFO queue at capacity, evicted pages go to updating after commit."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memory.models import MemoryEvent, Page
from memory.models.events import EventKind
from memory.models.tiers import Tier
from memory.services.turns import STM_EVICT_SQL, InvalidTurn, turn_record
from tests import builders


def stm_messages(space):
    return list(
        Page.objects.filter(space=space, tier=Tier.SHORT_TERM).order_by("seq").values_list("user_message", flat=True)
    )


def test_a_turn_becomes_one_short_term_page(space):
    recorded = builders.turn(
        space, user_message="I adopted a cat named Miso.", assistant_reply="Congratulations on Miso!"
    )
    page = Page.objects.get()
    assert recorded.page == page
    assert (page.tier, page.seq, page.user_message, page.assistant_reply) == (
        Tier.SHORT_TERM,
        1,
        "I adopted a cat named Miso.",
        "Congratulations on Miso!",
    )
    assert recorded.queued_updating is False


def test_short_term_memory_keeps_the_latest_seven_turns_in_order(space, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks():
        builders.turns(space, messages=[f"message {i}" for i in range(10)])
    assert stm_messages(space) == [f"message {i}" for i in range(3, 10)]
    evicted = Page.objects.filter(space=space, tier=Tier.MID_TERM).order_by("seq")
    assert [p.user_message for p in evicted] == ["message 0", "message 1", "message 2"]


def test_the_overflowing_turn_queues_updating_only_after_commit(space, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        results = builders.turns(space, messages=[f"message {i}" for i in range(8)])
    assert [r.queued_updating for r in results] == [False] * 7 + [True]
    assert len(callbacks) == 1
    assert results[-1].evicted_page_ids == [Page.objects.get(user_message="message 0").id]


def test_a_paused_memory_answers_but_drops_what_leaves_short_term(space, django_capture_on_commit_callbacks):
    builders.pause(space)
    with django_capture_on_commit_callbacks() as callbacks:
        builders.turns(space, messages=[f"message {i}" for i in range(9)])
    assert stm_messages(space) == [f"message {i}" for i in range(2, 9)]
    assert not Page.objects.filter(tier=Tier.MID_TERM).exists()
    assert callbacks == []
    assert MemoryEvent.objects.filter(kind=EventKind.PAUSED_DROP).count() == 2


@pytest.mark.parametrize(
    ("user_message", "error"),
    [
        ("", "user_message is empty"),
        ("   ", "user_message is empty"),
        ("a\x00b", "NUL"),
        ("x" * 64_001, "longer than 64000"),
    ],
)
def test_a_bad_turn_is_refused_with_a_clear_error_and_stores_nothing(space, user_message, error):
    with pytest.raises(InvalidTurn, match=error):
        builders.turn(space, user_message=user_message)
    assert not Page.objects.exists()


def test_a_user_and_an_assistant_of_two_tenants_cannot_share_memory(space, other_space):
    with pytest.raises(InvalidTurn, match="different tenants"):
        turn_record(end_user=space.end_user, assistant=other_space.assistant, user_message="hi", assistant_reply="hi")


def test_html_is_stored_as_the_text_it_is(space):
    builders.turn(space, user_message="<script>alert('x')</script>")
    assert Page.objects.get().user_message == "<script>alert('x')</script>"


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_turns_for_one_user_give_twenty_pages_in_order_and_nothing_lost(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    space = builders.space_of(builders.end_user(tenant="busy"))
    errors: list[BaseException] = []

    def send(i: int) -> None:
        try:
            builders.turn(space, user_message=f"concurrent {i}")
        except BaseException as exc:  # pragma: no cover - surfaced by the assert below
            errors.append(exc)
        finally:
            connection.close()

    from memoryos_site.celery import app

    app.conf.task_always_eager = False
    sent = []
    original = app.send_task
    app.send_task = lambda *a, **k: sent.append(a)  # the broker is not under test here
    try:
        threads = [threading.Thread(target=send, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        app.send_task = original
    assert errors == []
    pages = list(Page.objects.filter(space=space).order_by("seq"))
    assert [p.seq for p in pages] == list(range(1, 21))
    assert sorted(p.user_message for p in pages) == sorted(f"concurrent {i}" for i in range(20))
    assert Page.objects.filter(space=space, tier=Tier.SHORT_TERM).count() == 7
    assert Page.objects.filter(space=space, tier=Tier.MID_TERM).count() == 13


def test_a_deactivated_user_or_assistant_records_no_turn(space):
    type(space.end_user).objects.filter(pk=space.end_user_id).update(is_active=False)
    space.end_user.refresh_from_db()
    with pytest.raises(InvalidTurn, match="end user is deactivated"):
        builders.turn(space, user_message="hello")
    space.end_user.is_active = True
    space.assistant.is_active = False
    with pytest.raises(InvalidTurn, match="assistant is deactivated"):
        builders.turn(space, user_message="hello")
    assert not Page.objects.exists()


def test_counting_the_pages_that_wait_for_placement_reads_their_own_small_index(space):
    """Every turn that overflows STM counts the space's pages waiting for placement: that count must not read the
    space's thousands of entries in the space and segment indexes (7.7 ms for a user outside PostgreSQL's cache)."""
    params = {"space": space.pk, "mid_term": Tier.MID_TERM, "short_term": Tier.SHORT_TERM, "capacity": 7}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a few test rows would otherwise be read whole
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(f"EXPLAIN {STM_EVICT_SQL}", params | {"count_waiting": True})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "page_waiting_placement" in plan, plan
