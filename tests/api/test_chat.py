"""POST /api/v1/chat/: the assistant answers from memory (offline here: no LLM configured), and the turn is kept."""

from __future__ import annotations

from django.utils import timezone

from memory.llm import LLMError, use_llm
from memory.models import AuditEntry, ChatReply, EndUser, Page
from memory.models.tiers import PageSource
from tests.api.conftest import error_of
from tests.fakes import ScriptedLLM

URL = "/api/v1/chat/"


def say(api, message: str = "What do you remember about Biscuit?", key: str | None = None, user: str = "alice"):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return api.post(URL, {"user": user, "assistant": "ava", "message": message}, format="json", **headers)


def test_it_answers_and_says_which_memory_it_used(api, memory):
    response = say(api)

    assert response.status_code == 200
    body = response.json()
    assert body["reply"] and body["mode"] == "offline"
    assert memory.mtm_page.pk in [p["id"] for p in body["memory_used"]["pages"]]
    page = Page.objects.get(pk=body["page_id"])
    assert page.user_message == "What do you remember about Biscuit?" and page.source == PageSource.CHAT


def test_the_memory_it_used_is_audited_with_the_token_as_actor(api, memory):
    say(api)

    entry = AuditEntry.objects.get(action="reply.memory_injected")
    assert entry.actor_kind == "api_token"


def test_a_new_user_is_created(api, tenant):
    assert say(api, user="newcomer").status_code == 200
    assert EndUser.objects.filter(tenant=tenant, external_id="newcomer").exists()


def test_a_retried_message_with_the_same_key_is_answered_once(api, memory):
    pages_before = Page.objects.count()

    first = say(api, key="msg-1")
    again = say(api, key="msg-1")

    assert again.json() == first.json()
    assert ChatReply.objects.count() == 1
    assert Page.objects.count() == pages_before + 1


def test_the_same_key_with_another_message_is_a_conflict(api, memory):
    say(api, key="msg-1")

    response = say(api, message="Something else", key="msg-1")

    assert response.status_code == 409
    assert error_of(response)["code"] == "idempotency_key_reused"


def test_an_empty_or_oversized_message_is_a_validation_error(api, memory, settings):
    settings.MEMORY_MESSAGE_MAX_CHARS = 20

    for message in ("", "   ", "x" * 21):
        response = say(api, message=message)
        assert response.status_code == 400
        assert list(error_of(response)["fields"]) == ["message"]


def test_an_unknown_assistant_is_not_found(api, memory):
    response = api.post(URL, {"user": "alice", "assistant": "nobody", "message": "hi"}, format="json")

    assert response.status_code == 404


def test_a_model_failure_is_a_502_that_stores_nothing_and_the_key_can_be_retried(api, memory, settings):
    settings.LLM_BASE_URL = "http://llm.invalid/v1"
    pages_before = Page.objects.count()

    with use_llm(ScriptedLLM([LLMError("the model is overloaded", retryable=True), "Biscuit is a beagle."])):
        failed = say(api, key="msg-1")
        retried = say(api, key="msg-1")

    assert failed.status_code == 502
    assert error_of(failed)["code"] == "generation_failed"
    assert "overloaded" in error_of(failed)["message"]
    assert retried.status_code == 200 and retried.json()["reply"] == "Biscuit is a beagle."
    assert retried.json()["mode"] == "llm"
    assert Page.objects.count() == pages_before + 1


def test_offline_it_answers_where_the_user_works_nine_turns_after_they_said_it(
    api, alice, django_capture_on_commit_callbacks
):
    said = [
        "For work I'm a product manager at a fintech startup.",
        "I have a golden retriever called Pepper.",
        "My sister lives in Oslo.",
        "I'm learning to play the cello.",
        "The weather has been grey all week.",
        "I'm severely allergic to peanuts and carry an EpiPen.",
        "We watched a documentary about octopuses last night.",
        "I want to repaint the kitchen in spring.",
        "My favourite author is Ursula K. Le Guin.",
    ]
    with django_capture_on_commit_callbacks(execute=True):  # the turns that leave short-term memory are placed
        for number, message in enumerate(said):
            say(api, message, key=f"turn-{number}")

    body = say(api, "Where do I work?", key="question").json()

    first = body["reply"].splitlines()[0]
    assert "you're a product manager at a fintech startup — you told me on" in first
    work_page = Page.objects.get(user_message=said[0])
    assert work_page.tier == "mtm" and work_page.segment_id is not None
    assert body["memory_used"]["pages"][0]["id"] == work_page.id


def test_offline_it_answers_which_fruit_the_user_likes_from_this_conversation(api, alice):
    for number, message in enumerate(["I like kiwis.", "My brother is visiting next weekend.", "Rainy day today."]):
        say(api, message, key=f"turn-{number}")

    body = say(api, "What fruit do I like?", key="question").json()

    assert body["reply"].splitlines()[0].endswith("You like kiwis — you told me on " + _today())
    kiwi_page = Page.objects.get(user_message="I like kiwis.")
    assert [p["id"] for p in body["memory_used"]["pages"]] == [kiwi_page.id]
    assert body["memory_used"]["short_term_page_ids"] == []


def test_offline_with_nothing_relevant_it_says_so_and_uses_no_memory(api, alice):
    say(api, "I like kiwis.", key="turn-0")

    body = say(api, "Which train goes to Porto?", key="question").json()

    assert "I don't remember anything relevant to this yet" in body["reply"]
    assert body["memory_used"]["pages"] == [] and body["memory_used"]["user_knowledge"] == []


def _today() -> str:
    return f"{timezone.now():%d %b}.".lstrip("0")
