"""The fake model answers a chat with a short sentence, or, for the proxy's bench, with a reply as long as a chat
model's: its length is part of what storing the turn costs."""

from __future__ import annotations

from evaluation import fake_llm
from evaluation.bench import proxy_overhead


def ask(question: str) -> str:
    return fake_llm.completion_text({"messages": [{"role": "user", "content": question}]})


def test_a_chat_gets_the_short_sentence_by_default():
    assert ask("What did I say about Leeds?") == fake_llm.SHORT_REPLY


def test_with_a_reply_length_each_question_gets_its_own_prose_of_about_that_length(monkeypatch):
    monkeypatch.setattr(fake_llm, "REPLY_CHARS", 1000)

    first, again, other = ask("What did I say about Leeds?"), ask("What did I say about Leeds?"), ask("And Paris?")

    assert 800 <= len(first) <= 1000 and 800 <= len(other) <= 1000
    assert first == again and first != other
    assert len(set(first.lower().split())) > 50  # prose with a vocabulary, not one sentence repeated


def test_the_proxy_bench_asks_for_a_chat_models_length_and_puts_the_short_sentence_back():
    with proxy_overhead._model_over_http():
        assert fake_llm.REPLY_CHARS == proxy_overhead.REPLY_CHARS == 1000
    assert fake_llm.REPLY_CHARS == 0
