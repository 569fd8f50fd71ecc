"""Offline memory steps: deterministic heuristics that do each step without a language model.

Used when no LLM endpoint is configured (see memory.steps.get_steps). Everything here is pure: plain strings in,
plain strings and dataclasses out, no network and no database. The text analysis itself lives in memory.text, the
rewriting of first-person sentences as statements in memory.statements. A reply the system wrote without a model
reaches these steps empty (memory.services.updating.page_turn_text), so none of its text becomes memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from django.conf import settings

from memory.statements import about_assistant, about_user
from memory.steps.types import ChainTopic, Facts, KnownFact, PromotionFindings, TurnText, Usage
from memory.text import analyse, clean_text, extract_keywords, keyword_weights, split_sentences, trim
from memory.validity import replaced_by

NEW_SESSION_GAP_SECONDS = 2 * 60 * 60
MAX_FACTS_PER_CALL = 10
MAX_FACT_CHARS = 240
PROFILE_HEADER = "Profile (offline mode, extractive):"

DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}:\s*")

USER_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|we'll|our)\b", re.IGNORECASE)
ASSISTANT_COMMITMENT = re.compile(
    r"\b(?:i'll|i will|i can|i could|i'd|i would|i recommend|i suggest|let me(?! know)|let's|i've|i have|"
    r"i'm going to|i am going to|we'll|we will|we can)\b",
    re.IGNORECASE,
)


# An assistant sentence that quotes, cites a date or says what the user said is memory recited back, not its own.
RECITAL = re.compile(
    r"[“”\"]|\d{4}-\d{2}-\d{2}|\b(?:you|the user)\s+(?:said|told|mentioned|wrote|shared)\b|\bsaid:|"
    r"\bI (?:remember|recall)\b|\bearlier in this conversation\b",
    re.IGNORECASE,
)
RECITED_SHARE = 0.6  # an assistant sentence whose content words are mostly the user's repeats them


def _sentence_score(sentence: str, words: list[str], weights: dict[str, float]) -> float:
    """How informative a sentence is: its distinct keyword weight, discounted for short sentences and questions."""
    distinct = set(words)
    score = sum(weights[word] for word in distinct)
    if len(distinct) < 3:
        score *= 0.5
    if sentence.rstrip("\"'”’)] ").endswith("?"):
        score *= 0.5
    return score


def topic_summary(text: str, max_chars: int = 220) -> str:
    """The single most informative sentence of a text, trimmed to `max_chars`; never empty for non-empty text."""
    analysed, proper = analyse(text)
    if not analysed:
        return trim(clean_text(text), max_chars) or trim(text, max_chars)
    weights = keyword_weights(analysed, proper)
    scores = [_sentence_score(sentence, words, weights) for sentence, words in analysed]
    best = max(range(len(analysed)), key=lambda index: (scores[index], -index))
    return trim(analysed[best][0], max_chars)


def _as_sentence(text: str) -> str:
    """The text with terminal punctuation, so that two joined pieces read as two sentences."""
    return text if text[-1:] in ".!?…" else text + "."


def chain_summary(previous_summary: str, topic: str, max_chars: int = 300) -> str:
    """A rolling extractive summary of a dialogue chain: where it started, then its latest topic."""
    first = next(iter(split_sentences(previous_summary)), "")
    topic = " ".join(topic.split())
    if not first or first.casefold().rstrip(".!?… ") in topic.casefold():
        return trim(topic or first, max_chars)
    if not topic or topic.casefold().rstrip(".!?… ") in first.casefold():
        return trim(first, max_chars)
    first = trim(_as_sentence(first), max(max_chars - len(topic) - 1, max_chars // 2))
    return f"{first} {trim(topic, max_chars - len(first) - 1)}".strip()


def continues(similarity: float | None, gap_seconds: float | None, threshold: float) -> bool:
    """Whether a page continues the previous one: same session (gap of two hours at most) and similar enough."""
    if similarity is None:
        return False
    if gap_seconds is not None and gap_seconds > NEW_SESSION_GAP_SECONDS:
        return False
    return similarity >= threshold


def _candidate_sentences(text: str, pattern: re.Pattern[str]) -> Iterable[tuple[str, int]]:
    """Statements (not questions) of at least four words that match `pattern`, with their content word count."""
    for sentence, words in analyse(text)[0]:
        if sentence.rstrip("\"'”’)] ").endswith("?") or len(sentence.split()) < 4:
            continue
        if pattern.search(sentence) and len(words) >= 2:
            yield sentence, len(words)


def _facts(texts: Iterable[str], pattern: re.Pattern[str], statement: Callable[[str], str]) -> list[str]:
    """Statements made of matching sentences, deduplicated, at most ten (the richest), in the order they were said."""
    entries: list[tuple[int, str]] = []
    seen: set[str] = set()
    for text in texts:
        for sentence, richness in _candidate_sentences(text, pattern):
            fact = trim(statement(sentence), MAX_FACT_CHARS)
            key = " ".join(fact.casefold().split())
            if key not in seen:
                seen.add(key)
                entries.append((richness, fact))
    richest = sorted(range(len(entries)), key=lambda index: -entries[index][0])[:MAX_FACTS_PER_CALL]
    return [entries[index][1] for index in sorted(richest)]


def user_facts(turns: Iterable[TurnText]) -> list[str]:
    """Facts about the user: their first-person statements (not questions, not small talk), as statements about the
    user ("I have a dog" -> "The user has a dog"); the date is the knowledge entry's, not part of the text."""
    return _facts((turn.user_message for turn in turns), USER_FIRST_PERSON, about_user)


def _recites_memory(sentence: str, user_words: set[str]) -> bool:
    """Whether an assistant sentence repeats memory back (quotes, "you said", dates, the user's own words)."""
    if RECITAL.search(sentence):
        return True
    words = {word for _, found in analyse(sentence)[0] for word in found}
    return bool(words) and len(words & user_words) >= RECITED_SHARE * len(words)


def assistant_facts(turns: Iterable[TurnText]) -> list[str]:
    """Facts about the assistant: what its own replies say it did, will do, or recommends, as statements.

    Sentences reciting memory back are not commitments and are skipped; so are replies the system wrote without a
    model (their TurnText carries no reply).
    """
    turns = list(turns)
    user_words = {word for turn in turns for _, found in analyse(turn.user_message)[0] for word in found}
    replies = (
        " ".join(s for s in split_sentences(turn.assistant_reply) if not _recites_memory(s, user_words))
        for turn in turns
    )
    return _facts(replies, ASSISTANT_COMMITMENT, about_assistant)


def _fact_key(line: str) -> str:
    """The dedupe key of a profile line: the text without its date, case and spacing."""
    return " ".join(DATE_PREFIX.sub("", line).casefold().split())


def _profile_lines(profile: str) -> list[str]:
    """The entries of an existing profile: every non-empty line but the header, without its bullet."""
    lines = []
    for line in (profile or "").splitlines():
        line = line.strip()
        if line and line != PROFILE_HEADER:
            lines.append(line[2:].strip() if line.startswith("- ") else line)
    return lines


def profile_merge(profile: str, facts: list[str], max_lines: int = 20) -> str:
    """The profile with new facts appended (deduplicated, oldest dropped past `max_lines`); unchanged if none is new.

    A line a new fact replaces (the same slot with another value, memory.validity) leaves the profile: the profile
    says what is true now, and the replaced fact stays in the knowledge store as history.
    """
    lines = _profile_lines(profile)
    seen = {_fact_key(line) for line in lines}
    new = []
    for fact in facts:
        fact = " ".join(fact.split())
        if fact and _fact_key(fact) not in seen:
            seen.add(_fact_key(fact))
            new.append(fact)
    if not new:
        return profile
    new = [fact for i, fact in enumerate(new) if not any(replaced_by(fact, later) for later in new[i + 1 :])]
    lines = [line for line in lines if not any(replaced_by(line, fact) for fact in new)]
    kept = (lines + new)[-max_lines:] if max_lines > 0 else []
    return "\n".join([PROFILE_HEADER, *(f"- {line}" for line in kept)])


class OfflineSteps:
    """The memory steps done by deterministic heuristics: no network, no LLM calls, usage always zero."""

    mode = "offline"

    def __init__(self) -> None:
        self.usage = Usage()

    def chain_and_topic(
        self, *, previous: TurnText | None, previous_chain_summary: str, page: TurnText, similarity: float | None
    ) -> ChainTopic:
        """Decide continuity from similarity and time gap, roll the chain summary, summarise the page's topic."""
        gap = (page.at - previous.at).total_seconds() if previous is not None else None
        threshold = getattr(settings, "MEMORY_CONTINUITY_THRESHOLD", 0.35)
        linked = previous is not None and continues(similarity, gap, threshold)
        topic = topic_summary(page.text)
        summary = chain_summary(previous_chain_summary if linked else "", topic)
        return ChainTopic(
            continues=linked, chain_summary=summary, topic_summary=topic, keywords=extract_keywords(page.text)
        )

    def chain_and_topics(
        self,
        *,
        previous: TurnText | None,
        previous_chain_summary: str,
        pages: list[TurnText],
        similarities: list[float | None],
    ) -> list[ChainTopic]:
        """`chain_and_topic` page after page, each page's chain continuing from the result for the one before."""
        results = []
        for page, similarity in zip(pages, similarities, strict=True):
            chain = self.chain_and_topic(
                previous=previous, previous_chain_summary=previous_chain_summary, page=page, similarity=similarity
            )
            results.append(chain)
            previous, previous_chain_summary = page, chain.chain_summary
        return results

    def promotion_analyse(
        self, *, profile: str, pages: list[TurnText], known: tuple[KnownFact, ...] = ()
    ) -> PromotionFindings:
        """`profile_update` and `knowledge_extract` of the same pages, exactly as the two steps give them (`known` is
        not read: offline, the promotion service applies memory.validity's rule to what replaces what)."""
        return PromotionFindings(
            profile=self.profile_update(profile=profile, pages=pages), facts=self.knowledge_extract(pages=pages)
        )

    def profile_update(self, *, profile: str, pages: list[TurnText]) -> str:
        """The profile with what the user said of themselves in these pages merged in, as statements about them."""
        return profile_merge(profile, user_facts(pages))

    def knowledge_extract(self, *, pages: list[TurnText], known: tuple[KnownFact, ...] = ()) -> Facts:
        """First-person facts about the user and commitments of the assistant found in the pages."""
        return Facts(user=user_facts(pages), assistant=assistant_facts(pages))
