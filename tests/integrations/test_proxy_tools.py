"""Function calling through the memory proxy: the caller's tools reach the model unchanged, the model's tool calls
come back in OpenAI's shape, and only the user's message and the final answer in words are stored as memory.

Driven by the `openai` client against the live test server, with the fake OpenAI-compatible model (over HTTP) as the
configured model: given tools it calls the first one; given a tool's result it answers in words.
"""

from __future__ import annotations

import json

import openai
import pytest
from django.test import Client

from evaluation.fake_llm import RECEIVED, TOOL_ANSWERED, TOOL_CALL_ID
from memory.llm import LLMReply, use_llm
from memory.models import AuditEntry, ChatReply, Page, ReplyStatus
from tests.fakes import ScriptedLLM
from tests.integrations.conftest import proxy_client

URL = "/v1/chat/completions"
QUESTION = "Will it rain at Biscuit's walk tomorrow?"
SYSTEM = {"role": "system", "content": "Be brief."}
WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The forecast for a place and a day.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
    },
}
FORECAST = "Forecast for Hyde Park, 2026-11-25: light rain from 07:00 to 09:00, 8 °C. " * 20  # a large tool result
ASSISTANT = {"X-MemoryOS-Assistant": "ava"}


def ask(live_server, token, messages, **options):
    return proxy_client(live_server, token).chat.completions.create(
        model="fake-load-model", messages=messages, user="alice", extra_headers=ASSISTANT, **options
    )


def answered_with_tool_result(tool_call) -> list[dict]:
    """The exchange an agent sends once it ran the tool: the question, the model's call, the tool's result."""
    call = {"id": tool_call.id, "type": "function", "function": tool_call.function.model_dump()}
    return [
        SYSTEM,
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": tool_call.id, "content": FORECAST},
    ]


def streamed_tool_call(chunks) -> dict:
    """A streamed tool call put together from its deltas, as the openai client's users do."""
    call = {"id": "", "name": "", "arguments": ""}
    for chunk in chunks:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call["id"] = delta.id or call["id"]
            call["name"] = (delta.function.name if delta.function else None) or call["name"]
            call["arguments"] += (delta.function.arguments if delta.function else None) or ""
    return call


def test_a_reply_that_calls_a_tool_comes_back_in_openais_shape_and_stores_nothing(live_server, model, memory, token):
    completion = ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER])

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert (call.id, call.type, call.function.name) == (TOOL_CALL_ID, "function", "weather")
    assert json.loads(call.function.arguments) == {"question": QUESTION}
    reply = ChatReply.objects.get(pk=completion.memoryos_reply_id)
    assert reply.status == ReplyStatus.DONE and reply.page is None and reply.llm_calls == 1
    assert not Page.objects.filter(user_message=QUESTION).exists()
    assert AuditEntry.objects.filter(action="reply.memory_injected", request_id=f"chat-reply-{reply.pk}").exists()


def test_the_tools_reach_the_model_unchanged_after_the_memory(live_server, model, memory, token):
    ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER], tool_choice="required")

    sent = RECEIVED[-1]
    assert sent["tools"] == [WEATHER] and sent["tool_choice"] == "required"
    assert "<memory>" in sent["messages"][0]["content"] and "Biscuit" in sent["messages"][0]["content"]
    assert sent["messages"][-1] == {"role": "user", "content": QUESTION}


def test_the_answer_in_words_after_the_tools_result_is_stored_with_the_users_message(live_server, model, memory, token):
    first = ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER])
    exchange = answered_with_tool_result(first.choices[0].message.tool_calls[0])

    final = ask(live_server, token, exchange, tools=[WEATHER])

    assert final.choices[0].finish_reason == "stop" and final.choices[0].message.content == TOOL_ANSWERED
    assert RECEIVED[-1]["messages"][-3:] == exchange[-3:]  # the question, the call and the result, unchanged
    (page,) = Page.objects.filter(space__end_user__external_id="alice", user_message=QUESTION)
    assert page.assistant_reply == TOOL_ANSWERED and page.reply.pk == final.memoryos_reply_id


def test_a_tools_result_is_never_stored_as_memory(live_server, model, memory, token):
    first = ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER])
    ask(live_server, token, answered_with_tool_result(first.choices[0].message.tool_calls[0]), tools=[WEATHER])

    assert not Page.objects.filter(user_message__contains="Hyde Park").exists()
    assert not Page.objects.filter(assistant_reply__contains="Hyde Park").exists()
    assert not ChatReply.objects.filter(user_message__contains="Hyde Park").exists()


def test_a_streamed_tool_call_arrives_as_openais_deltas_and_stores_nothing(live_server, model, memory, token):
    chunks = list(
        ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER], stream=True)
    )

    call = streamed_tool_call(chunks)
    assert (call["id"], call["name"]) == (TOOL_CALL_ID, "weather")
    assert json.loads(call["arguments"]) == {"question": QUESTION}
    assert len([c for c in chunks if c.choices and c.choices[0].delta.tool_calls]) > 2  # name first, then pieces
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert ChatReply.objects.get(pk=chunks[0].memoryos_reply_id).status == ReplyStatus.DONE
    assert not Page.objects.filter(user_message=QUESTION).exists()


def test_a_streamed_answer_after_the_tools_result_is_stored(live_server, model, memory, token):
    first = ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER])
    exchange = answered_with_tool_result(first.choices[0].message.tool_calls[0])

    chunks = list(ask(live_server, token, exchange, tools=[WEATHER], stream=True))

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == TOOL_ANSWERED
    assert Page.objects.get(user_message=QUESTION).assistant_reply == TOOL_ANSWERED


def test_a_retry_of_a_tool_call_with_its_key_asks_the_model_again_without_a_second_record(
    live_server, model, memory, token
):
    messages = [SYSTEM, {"role": "user", "content": QUESTION}]
    headers = {**ASSISTANT, "Idempotency-Key": "tools-0001"}
    client = proxy_client(live_server, token)
    first, again = (
        client.chat.completions.create(
            model="m", messages=messages, user="alice", tools=[WEATHER], extra_headers=headers
        )
        for _ in range(2)
    )

    assert again.choices[0].message.tool_calls[0].id == first.choices[0].message.tool_calls[0].id
    assert again.memoryos_reply_id == first.memoryos_reply_id
    assert ChatReply.objects.get().status == ReplyStatus.DONE and not Page.objects.filter(user_message=QUESTION)


def test_without_a_model_tools_are_refused_rather_than_ignored(live_server, memory, token):
    with pytest.raises(openai.BadRequestError) as tools:
        ask(live_server, token, [SYSTEM, {"role": "user", "content": QUESTION}], tools=[WEATHER])
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    exchange = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": FORECAST},
    ]
    with pytest.raises(openai.BadRequestError) as result:
        ask(live_server, token, exchange)
    with pytest.raises(openai.BadRequestError) as choice:
        ask(live_server, token, [{"role": "user", "content": QUESTION}], tool_choice="auto")

    assert tools.value.body["param"] == "tools" and "configured model" in tools.value.body["message"]
    assert choice.value.body["param"] == "tool_choice"
    assert tools.value.body["code"] == "unsupported_parameter"
    assert result.value.body["param"] == "messages"
    assert not ChatReply.objects.exists()


def test_an_exchange_must_end_with_the_users_message_or_a_tools_result(live_server, model, memory, token):
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    ending_with_the_call = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]

    with pytest.raises(openai.BadRequestError, match="tool's result") as refused:
        ask(live_server, token, ending_with_the_call, tools=[WEATHER])

    assert refused.value.body["param"] == "messages" and not ChatReply.objects.exists()


def test_text_sent_along_with_tool_calls_is_not_stored_either(settings, memory, token):
    settings.LLM_BASE_URL = "http://model.invalid/v1"
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    preamble = LLMReply(text="Let me check the forecast.", prompt_tokens=9, completion_tokens=9, tool_calls=(call,))
    body = {"user": "alice", "messages": [{"role": "user", "content": QUESTION}], "tools": [WEATHER]}

    with use_llm(ScriptedLLM([preamble])):
        response = Client().post(
            URL, json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )

    message = response.json()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Let me check the forecast.", "tool_calls": [call]}
    assert not Page.objects.filter(user_message=QUESTION).exists()
