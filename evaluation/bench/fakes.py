"""Stand-ins for the two outside seams while benchmarking: an embedder that costs microseconds, and an LLM.

`memory_bench` measures our code and our database, not a model: the embedder and the LLM are replaced at their
seams (`use_embedder`, `use_llm`) by these deterministic fakes. They are benchmark fixtures, never used to serve.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from evaluation.bench.synthetic_text import TOPICS
from memory.llm import LLMReply
from memory.text import extract_keywords, split_sentences

WORD = re.compile(r"[a-z]+")
NOISE = 0.8  # texts of one topic have a cosine of about 1 / (1 + NOISE²) ≈ 0.6; of two topics, about 0


class BenchEmbedder:
    """Random unit vectors with topic structure: a text's vector is the sum of the random centres of the topics
    whose keywords it contains, plus noise seeded by the text itself, normalised.

    It takes the name and dimension of the store's model, so the store's model guard lets it through; the vectors it
    makes only ever land in a benchmark tenant.
    """

    def __init__(self, *, name: str, dimension: int, seed: int = 0) -> None:
        self.name, self.dimension = name, dimension
        centres = np.random.default_rng(seed).standard_normal((len(TOPICS), dimension)).astype(np.float32)
        self._centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        self._topic_of = {word: i for i, topic in enumerate(TOPICS) for word in topic.keywords}
        self.calls = 0

    def vector(self, text: str) -> np.ndarray:
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        noise = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(self.dimension)
        vector = NOISE * noise.astype(np.float32) / np.sqrt(self.dimension)
        for topic in {self._topic_of[w] for w in WORD.findall(text.lower()) if w in self._topic_of}:
            vector += self._centres[topic]
        return vector / (np.linalg.norm(vector) or 1.0)

    def topic_vector(self, topic_index: int, text: str) -> np.ndarray:
        """The vector of a text known to be about one topic (bulk generation: no keyword scan needed)."""
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        noise = np.random.default_rng(int.from_bytes(digest, "big")).standard_normal(self.dimension)
        vector = self._centres[topic_index] + NOISE * noise.astype(np.float32) / np.sqrt(self.dimension)
        return vector / np.linalg.norm(vector)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.array([self.vector(text) for text in texts], dtype=np.float32)


PAGE_BLOCK = re.compile(r"<<<PAGE[^\n]*\n(.*?)\n>>>", re.DOTALL)
SIMILARITY = re.compile(r"similarity of the two pages, a hint only: (-?[\d.]+)")
HINT = re.compile(r"page (\d+): (-?[\d.]+)")
DATE = re.compile(r"at=(\d{4}-\d{2}-\d{2})")


class BenchLLM:
    """Answers the three memory steps with valid JSON derived from the prompt, instantly; counts its calls.

    chain_and_topic: continues when the embedding hint is ≥ 0.5; the topic is the page's first sentence, keywords
    from the offline extractor; chain_and_topics: the same for each of several pages. profile_update: the profile
    plus one line. knowledge_extract: the users' sentences. promotion_analyse: those two in one answer.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.calls_by_step: dict[str, int] = {}

    def complete(
        self,
        messages: list[dict],
        *,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float = 0.2,
        options: dict | None = None,
    ) -> LLMReply:
        system, prompt = messages[0]["content"], messages[-1]["content"]
        if '"pages"' in system:
            step, answer = "chain_and_topics", self._chains(prompt)
        elif '"continues"' in system:
            step, answer = "chain_and_topic", self._chain(prompt)
        elif '"profile"' in system and '"user_facts"' in system:
            step, answer = "promotion_analyse", {**self._profile(prompt), **self._facts(prompt)}
        elif '"profile"' in system:
            step, answer = "profile_update", self._profile(prompt)
        elif '"user_facts"' in system:
            step, answer = "knowledge_extract", self._facts(prompt)
        else:
            step, answer = "other", {"answer": "ok"}
        self.calls += 1
        self.calls_by_step[step] = self.calls_by_step.get(step, 0) + 1
        text = json.dumps(answer)
        return LLMReply(text=text, prompt_tokens=sum(len(m["content"]) for m in messages) // 4, completion_tokens=40)

    def _chain(self, prompt: str) -> dict:
        pages = PAGE_BLOCK.findall(prompt)
        page = pages[-1] if pages else prompt
        hint = SIMILARITY.search(prompt)
        sentences = split_sentences(page.replace("User: ", "").replace("Assistant: ", ""))
        topic = sentences[0] if sentences else page[:200]
        return {
            "continues": bool(hint and len(pages) > 1 and float(hint.group(1)) >= 0.5),
            "chain_summary": topic,
            "topic_summary": topic,
            "keywords": extract_keywords(page, limit=6) or ["chat"],
        }

    def _chains(self, prompt: str) -> dict:
        """One entry per new page, each answered as `_chain` answers a single page after its previous one."""
        has_previous = not prompt.startswith("Previous page:\nNONE")
        pages = PAGE_BLOCK.findall(prompt.split("New pages (", 1)[-1])
        hints = dict(HINT.findall(prompt))
        entries = []
        for number, page in enumerate(pages, start=1):
            hint = hints.get(str(number))
            sentences = split_sentences(page.replace("User: ", "").replace("Assistant: ", ""))
            topic = sentences[0] if sentences else page[:200]
            linked = bool(hint and (has_previous or number > 1) and float(hint) >= 0.5)
            keywords = extract_keywords(page, limit=6) or ["chat"]
            entries.append({"continues": linked, "chain_summary": topic, "topic_summary": topic, "keywords": keywords})
        return {"pages": entries}

    def _profile(self, prompt: str) -> dict:
        quoted = prompt.split("<<<PROFILE", 1)[-1].split(">>>", 1)[0].strip()
        current = [line for line in quoted.splitlines() if line != "(empty)"]
        pages = PAGE_BLOCK.findall(prompt)
        line = f"- Mentioned: {split_sentences(pages[0])[0][:160]}" if pages else "- (nothing new)"
        return {"profile": "\n".join([*current[-19:], line])}

    def _facts(self, prompt: str) -> dict:
        dates = DATE.findall(prompt)
        facts = []
        for date, page in zip(dates, PAGE_BLOCK.findall(prompt), strict=False):
            user = page.split("\nAssistant:", 1)[0].removeprefix("User: ")
            facts.append(f"{date}: The user said: {split_sentences(user)[0][:200]}" if user.strip() else "")
        return {"user_facts": [f for f in facts if f][:10], "assistant_facts": []}
