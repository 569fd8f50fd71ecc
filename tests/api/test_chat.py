"""POST /api/v1/chat/: the assistant answers from memory (offline here: no LLM configured), and the turn is kept."""

from __future__ import annotations

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
