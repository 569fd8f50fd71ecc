"""Finding 6: a chat whose end user is erased while the model answers ends as a refusal (410 erased) on every
interface, never a 500: chat service, the end user's chat, the REST API, the memory proxy and the MCP tool."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from chat.services import reply_generate
from integrations import tools
from integrations.access import principal_for_token
from integrations.errors import problem_of
from memory.llm import use_llm
from memory.models import EndUser
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.turns import EndUserClosed
from tests import builders
from tests.api.conftest import client_for, make_token
from tests.conftest import PASSWORD
from tests.fakes import ScriptedLLM


class ErasingLLM(ScriptedLLM):
    """A model that answers while a dpo erases the end user: the erasure commits during generation."""

    def __init__(self, external_id: str) -> None:
        super().__init__(["A reply from the model."])
        self.external_id = external_id

    def complete(self, messages, **options):
        end_user = EndUser.objects.get(external_id=self.external_id)
        user_erase(end_user=end_user, actor=Actor("operator", "9", "dana"), legal_basis="art. 17", dry_run=False)
        return super().complete(messages, **options)


@pytest.fixture
def racing(settings, alice, assistant, tmp_path):
    """Alice already has a memory space with Ava, and the model erases her while it answers."""
    settings.LLM_BASE_URL, settings.EXPORT_DIR = "http://llm.test/v1", tmp_path
    builders.space_of(alice, assistant)
    with use_llm(ErasingLLM("alice")):
        yield alice


def test_the_chat_service_raises_the_erasure_as_a_refusal(racing, assistant):
    with pytest.raises(EndUserClosed) as refused:
        reply_generate(end_user=racing, assistant=assistant, message="Hello there.", idempotency_key="k1")
    assert refused.value.erased


def test_the_end_users_chat_answers_410(racing):
    client = Client()
    assert client.login(username="alice", password=PASSWORD)
    response = client.post("/chat/ava/send/", {"message": "Hello there.", "idempotency_key": "k1"})
    assert response.status_code == 410


def test_the_rest_api_answers_410_erased(racing, tenant):
    body = {"user": "alice", "assistant": "ava", "message": "Hello there."}
    response = client_for(make_token(tenant)).post("/api/v1/chat/", body, format="json")
    assert response.status_code == 410, response.content
    assert response.json()["error"]["code"] == "erased"


def test_the_memory_proxy_answers_410_in_openais_shape(racing, tenant):
    body = {"model": "memoryos", "user": "alice", "messages": [{"role": "user", "content": "Hello there."}]}
    response = Client().post(
        "/v1/chat/completions?assistant=ava", json.dumps(body), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {make_token(tenant)}",
    )  # fmt: skip
    assert response.status_code == 410, response.content
    assert response.json()["error"]["code"] == "erased"


def test_the_mcp_chat_tool_fails_as_erased(racing, tenant):
    caller = principal_for_token(make_token(tenant), scope="write")
    with pytest.raises(EndUserClosed) as refused:
        tools.memory_chat_tool(caller, user="alice", message="Hello there.", assistant="ava")
    assert problem_of(refused.value).status == 410
