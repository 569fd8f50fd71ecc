"""Every request field the memory proxy gets is used, passed to the model, or refused by name: none is ignored.

What reaches the model is read from the fake OpenAI-compatible server (over HTTP, behind the LLM seam); refusals are
checked in-process with the scripted LLM, which must never be asked.
"""

from __future__ import annotations

import json

import openai
import pytest
from django.test import Client

from evaluation.fake_llm import RECEIVED
from memory.llm import use_llm
from memory.models import ChatReply
from tests.fakes import ScriptedLLM
from tests.integrations.conftest import proxy_client

URL = "/v1/chat/completions"
MESSAGES = [{"role": "user", "content": "What is my beagle called?"}]
ASSISTANT = {"X-MemoryOS-Assistant": "ava"}
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/biscuit.png"}}


@pytest.fixture
def llm(settings):
    settings.LLM_BASE_URL = "http://model.invalid/v1"
    scripted = ScriptedLLM(["Your beagle is called Biscuit."])
    with use_llm(scripted):
        yield scripted


def post(token: str, **fields) -> object:
    body = json.dumps({"model": "any", "user": "alice", "messages": MESSAGES, **fields})
    return Client().post(URL, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def ask(live_server, token, **options):
    return proxy_client(live_server, token).chat.completions.create(
        model="fake-load-model", messages=MESSAGES, user="alice", extra_headers=ASSISTANT, **options
    )


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        ({"n": 2}, "n", "unsupported_value"),
        ({"logprobs": True}, "logprobs", "unsupported_value"),
        ({"modalities": ["text", "audio"]}, "modalities", "unsupported_value"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio", "unsupported_parameter"),
        ({"functions": [{"name": "weather"}]}, "functions", "unsupported_parameter"),
        ({"top_logprobs": 3}, "top_logprobs", "unsupported_parameter"),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "Look"}, IMAGE]}]},
            "messages.0.content.1",
            "unsupported_value",
        ),
        ({"messages": [{"role": "user", "content": [AUDIO]}]}, "messages.0.content.0", "unsupported_value"),
        ({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages.0.role", "invalid_request"),
        ({"messages": [{"role": "critic", "content": "x"}]}, "messages.0.role", "invalid_request"),
        ({"temperature": "warm"}, "temperature", "invalid_value"),
        ({"max_tokens": 0}, "max_tokens", "invalid_value"),
        ({"stop": [1, 2]}, "stop", "invalid_value"),
        ({"tools": [{"type": "function"}]}, "tools", "invalid_value"),
    ],
)
def test_a_field_the_proxy_cannot_honour_is_refused_naming_it_and_the_model_is_not_asked(
    llm, memory, token, fields, param, code
):
    response = post(token, **fields)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert llm.calls == [] and not ChatReply.objects.exists()


def test_the_openai_client_raises_its_bad_request_error_naming_n(live_server, llm, memory, token):
    with pytest.raises(openai.BadRequestError, match="`n` is not supported") as refused:
        ask(live_server, token, n=2)

    assert refused.value.body["param"] == "n"


def test_the_default_values_of_the_fields_it_cannot_vary_are_accepted(llm, memory, token):
    response = post(token, n=1, logprobs=False, modalities=["text"], stream_options={"include_usage": True})

    assert response.status_code == 200, response.content


def test_sampling_and_limits_reach_the_model_as_sent(live_server, model, memory, token):
    ask(live_server, token, temperature=0.1, top_p=0.5, max_tokens=50, stop=["\n\n"], seed=7, presence_penalty=0.5)

    sent = RECEIVED[-1]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (0.1, 0.5, 50, 7)
    assert sent["stop"] == ["\n\n"] and sent["presence_penalty"] == 0.5


def test_the_end_users_id_is_not_sent_to_the_model(live_server, model, memory, token):
    ask(live_server, token)

    assert "user" not in RECEIVED[-1]


def test_a_token_limit_above_the_deployers_is_lowered_to_it(live_server, model, memory, token, settings):
    settings.CHAT_REPLY_MAX_TOKENS = 300

    ask(live_server, token, max_completion_tokens=5000)

    assert RECEIVED[-1]["max_tokens"] == 300 and "max_completion_tokens" not in RECEIVED[-1]


def test_without_sampling_fields_the_chats_own_are_sent(live_server, model, memory, token, settings):
    ask(live_server, token)

    assert RECEIVED[-1]["temperature"] == 0.7 and RECEIVED[-1]["max_tokens"] == settings.CHAT_REPLY_MAX_TOKENS


def test_a_streamed_completion_passes_its_fields_too(live_server, model, memory, token):
    list(ask(live_server, token, stream=True, seed=11, frequency_penalty=0.25))

    sent = RECEIVED[-1]
    assert sent["stream"] is True and (sent["seed"], sent["frequency_penalty"]) == (11, 0.25)
