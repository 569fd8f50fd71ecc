"""The LLM seam's streamed completion, over real HTTP against the fake OpenAI-compatible server."""

from __future__ import annotations

import pytest

from evaluation.fake_llm import fake_llm_server
from memory.llm import LLMClient, LLMError, LLMReply, build_client


@pytest.fixture(scope="module")
def fake_url():
    with fake_llm_server() as url:
        yield url


def test_a_streamed_completion_yields_its_pieces_then_the_whole_reply_with_its_usage(fake_url, settings):
    client = LLMClient(build_client(base_url=fake_url, api_key=""), model="fake-load-model")

    *pieces, reply = client.stream([{"role": "user", "content": "Hello"}], max_tokens=50)

    assert len(pieces) > 1 and all(isinstance(piece, str) for piece in pieces)
    assert isinstance(reply, LLMReply) and reply.text == "".join(pieces) == "Thanks, I will remember that."
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0


def test_a_stream_from_an_unreachable_model_raises_a_retryable_llm_error(settings):
    settings.LLM_MAX_RETRIES = 0
    client = LLMClient(build_client(base_url="http://127.0.0.1:9/v1", api_key=""), model="m")

    with pytest.raises(LLMError, match="could not be reached") as failure:
        list(client.stream([{"role": "user", "content": "Hello"}]))

    assert failure.value.retryable is True
