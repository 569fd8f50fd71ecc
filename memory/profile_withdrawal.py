"""Which lines and sentences of a profile state a rejected fact, and the profile without them. Pure: no database.

A profile states a fact in three forms: the offline merge's line ("- <fact text>",
memory.steps.offline_steps.profile_merge, dates and case aside), the fact's sentence nearly verbatim inside an LLM's
prose, or a paraphrase. The first two are removed sentence by sentence; a paraphrase cannot be cut out safely, so it
is only reported (`paraphrased`) and the caller withholds the profile until a model re-derives it
(ProfileVersion.stale).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory.steps.offline_steps import DATE_PREFIX, PROFILE_HEADER
from memory.text import split_sentences

if TYPE_CHECKING:
    from memory.models import ProfileVersion

NEARLY_VERBATIM = 0.85  # difflib ratio of a sentence to a fact's sentence: a word or two changed
PARAPHRASE_SHARE = 0.6  # share of a fact's content words one sentence holds: said again in other words
CONTENT_WORD = re.compile(r"[a-z0-9][a-z0-9'-]{3,}")
NOT_CONTENT = frozenset({"user", "user's", "their", "they", "that", "this", "with", "from", "have", "been", "about"})
BULLET = re.compile(r"^(\s*[-*•]\s+)")


@dataclass(frozen=True)
class ProfileWithdrawal:
    """A profile's text without what states the facts; `removed` the lines or sentences taken out."""

    text: str
    removed: list[str] = field(default_factory=list)
    paraphrased: list[str] = field(default_factory=list)  # sentences that seem to restate a fact in other words

    @property
    def changed(self) -> bool:
        return bool(self.removed)

    @property
    def needs_rederiving(self) -> bool:
        return bool(self.paraphrased)


def _key(text: str) -> str:
    """A sentence as compared: no bullet, date, case, spacing or closing punctuation."""
    text = DATE_PREFIX.sub("", BULLET.sub("", text.strip()))
    return " ".join(text.casefold().split()).rstrip(".!?… ")


def _fact_sentences(fact: str) -> list[str]:
    """The fact whole and each of its sentences of three words or more, as compared."""
    pieces = [fact, *(s for s in split_sentences(DATE_PREFIX.sub("", fact.strip())) if len(s.split()) >= 3)]
    return [key for key in dict.fromkeys(_key(p) for p in pieces) if key]


def _states(sentence: str, fact_keys: list[str], *, within: bool = True) -> bool:
    """Whether the sentence (or, not `within`, the whole line) is a fact nearly verbatim, or holds one."""
    said = _key(sentence)
    if not said:
        return False
    return any(
        (within and key in said) or difflib.SequenceMatcher(a=said, b=key).ratio() >= NEARLY_VERBATIM
        for key in fact_keys
    )


def _stem(word: str) -> str:
    """A crude stem, enough to meet "sees" and "seeing", "bakes" and "baked"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _content_words(text: str) -> set[str]:
    return {_stem(word) for word in CONTENT_WORD.findall(text.casefold()) if word not in NOT_CONTENT}


def _paraphrases(sentence: str, facts_words: list[set[str]]) -> bool:
    words = _content_words(sentence)
    return any(len(fact) >= 2 and len(words & fact) / len(fact) >= PARAPHRASE_SHARE for fact in facts_words)


def _line_without(line: str, fact_keys: list[str]) -> tuple[str | None, list[str]]:
    """The line without its sentences stating a fact (None when none is left), and the sentences removed."""
    bullet = BULLET.match(line)
    prefix = bullet.group(1) if bullet else ""
    body = line[len(prefix) :]
    if _states(body, fact_keys, within=False):
        return None, [line.strip()]
    sentences = split_sentences(body) or [body]
    kept = [s for s in sentences if not _states(s, fact_keys)]
    if len(kept) == len(sentences):
        return line, []
    removed = [s for s in sentences if s not in kept]
    return (prefix + " ".join(kept) if kept else None), removed


def profile_without(text: str, facts: list[str]) -> ProfileWithdrawal:
    """`text` without each line or sentence stating one of `facts`; the paraphrases that remain are listed."""
    fact_keys = [key for fact in facts for key in _fact_sentences(fact)]
    facts_words = [_content_words(DATE_PREFIX.sub("", fact)) for fact in facts]
    kept, removed, paraphrased = [], [], []
    for line in text.splitlines():
        if not line.strip() or line.strip() == PROFILE_HEADER:
            kept.append(line)
            continue
        rest, gone = _line_without(line, fact_keys)
        removed += gone
        if rest is not None:
            kept.append(rest)
            paraphrased += [s for s in split_sentences(rest) if _paraphrases(s, facts_words)]
    new_text = "\n".join(kept) if removed else text
    if new_text.strip() == PROFILE_HEADER:
        new_text = ""  # nothing but the offline header is left
    return ProfileWithdrawal(text=new_text, removed=removed, paraphrased=paraphrased)


@dataclass(frozen=True)
class ProfileChange:
    """What withdrawing rejected facts did to one profile version (memory.services.review): `version` is the one
    rewritten in place (pending), the new version written after the current one, or the current one marked stale (a
    paraphrase)."""

    version: ProfileVersion
    before: str
    removed: list[str]
    stale: bool = False
