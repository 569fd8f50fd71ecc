"""Offline memory steps: deterministic heuristics that do each step without a language model.

Used when no LLM endpoint is configured (see memory.steps.get_steps). Everything here is pure: plain strings in,
plain strings and dataclasses out, no network and no database. `extract_keywords` is also the cheap local query
keyword extractor of retrieval, so the same concept must yield the same keyword form in every text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from memory.steps import ChainTopic, Facts, TurnText, Usage

NEW_SESSION_GAP_SECONDS = 2 * 60 * 60
MAX_FACTS_PER_CALL = 10
MAX_FACT_CHARS = 240
PROFILE_HEADER = "Profile (offline mode, extractive):"


def _word_set(words: str) -> frozenset[str]:
    """The whitespace-separated words of a string literal, as a set (long word lists stay readable)."""
    return frozenset(words.split())


STOPWORDS: frozenset[str] = _word_set(
    """
    a about above after again against all almost along already also although always am among an and another any
    anybody anyone anything anyway anyways are around as at away back be because been before being below between
    both but by can cannot could did do does doing done down during each either else enough even ever every
    everybody everyone everything few for from further get gets getting go goes going gone got gotten had has have
    having he her here hers herself him himself his how however i if in into is it its itself just least less let
    lets like liked likes may maybe me might mine more most much must my myself neither never no nobody none nor not
    nothing now of off often oh ok okay on once one only onto or other others otherwise our ours ourselves out over
    own per perhaps quite rather really said same say says see seem seemed seems shall she should since so some
    somebody someone something sometimes somewhat soon still such than that the their theirs them themselves then
    there therefore these they thing things this those though through thus till to together too toward towards
    under until up upon us very via was way ways we well were what whatever when whenever where whereas wherever
    whether which while who whoever whole whom whose why will with within without would yet you your yours yourself
    yourselves
    it's that's what's there's here's let's he's she's who's how's where's when's why's
    yeah yea yep yup yes nope nah gonna wanna gotta kinda sorta lol lmao haha hahaha hehe omg btw tbh idk hmm umm
    hey hi hello bye wow ooh aww awesome great sure thanks thank cool nice amazing glad wonderful fantastic
    congrats congratulations totally definitely absolutely agree sounds sound pretty super lot lots stuff bit kind
    sort guy guys know think thought want wanted make made making take took taken give gave given tell told come
    came coming thinking taking giving telling trying saying seeing happen happened happening chat chatted cos cuz
    look looks looking feel feels felt keep kept put try tried mean means meant need needs use used new good
    bad best better big little right last next first day time today yesterday tomorrow tonight week year years
    ago long also anyway totally honestly actually basically literally seriously especially exactly probably
    """
)

# Abbreviations whose trailing period does not end a sentence.
ABBREVIATIONS = _word_set(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e eg ie a.m p.m approx dept est fig inc ltd co "
    "jan feb mar apr jun jul aug sep sept oct nov dec mt ft"
)

# Words that open a greeting or reaction before a name said to the listener ("Thanks, Mel!").
ADDRESS_OPENERS = _word_set(
    "hey hi hello thanks thank wow yeah yes yep congrats congratulations sorry oh ok okay bye dear well sure "
    "absolutely totally aw aww omg good great night morning"
)

IRREGULAR_SINGULARS = {
    "children": "child",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "wives": "wife",
    "knives": "knife",
    "wolves": "wolf",
    "shelves": "shelf",
    "halves": "half",
    "leaves": "leaf",
    "heroes": "hero",
    "potatoes": "potato",
    "tomatoes": "tomato",
    "echoes": "echo",
    "volcanoes": "volcano",
    "buses": "bus",
    "gases": "gas",
    "lenses": "lens",
    "bonuses": "bonus",
    "viruses": "virus",
    "campuses": "campus",
    "statuses": "status",
    "quizzes": "quiz",
    "focuses": "focus",
}

# Words that end like a plural but are singular (or would be mangled by stripping the ending).
KEEP_AS_IS = _word_set(
    "news lens series species means gas canvas atlas christmas alias bias texas vegas kansas arkansas chaos "
    "trans cosmos kudos ethos pathos physics mathematics economics politics athletics ethics gymnastics aerobics "
    "always perhaps yes its thus plus minus bonus corps diabetes rabies measles mumps scabies shingles herpes "
    "clothes"
)

# Nouns ending in -che whose plural must not lose the final e ("headaches" -> "headache", not "headach").
CHE_NOUNS = _word_set("ache headache niche cache avalanche moustache mustache psyche quiche cliche")

# Nouns ending in -ie whose plural must not become -y ("movies" -> "movie", not "movy").
IE_NOUNS = _word_set(
    "movie cookie zombie selfie smoothie brownie calorie hoodie rookie hippie freebie goalie veggie auntie sweetie "
    "genie prairie lingerie pie tie lie"
)

# Words keep inner apostrophes and hyphens, so "self-care" and "me-time" stay one keyword.
TOKEN = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")
CONTRACTION_SUFFIXES = ("n't", "'ll", "'d", "'re", "'ve", "'m")
SENTENCE_END = re.compile(r"(?:[.!?]+|…+)[\"'”’)\]]*(?=\s|$)")
HTML_TAG = re.compile(r"<[^>]{0,500}>")
URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
ROLE_LABEL = re.compile(r"^\s*(?:user|assistant)\s*:\s*", re.IGNORECASE | re.MULTILINE)
ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)?")
NEXT_INITIAL = re.compile(r"\s*[A-Z]\.")
NEXT_CHAR = re.compile(r"\s*(\S?)")
DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}:\s*")

USER_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|we'll|our)\b", re.IGNORECASE)
ASSISTANT_COMMITMENT = re.compile(
    r"\b(?:i'll|i will|i can|i could|i'd|i would|i recommend|i suggest|let me(?! know)|let's|i've|i have|"
    r"i'm going to|i am going to|we'll|we will|we can)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Word:
    """One content word of a sentence: its lowercase surface form and whether it looked like a proper noun."""

    surface: str
    capitalised: bool


def _clean(text: str) -> str:
    """Plain text for analysis: entities decoded, tags, URLs and role labels removed, one apostrophe style."""
    text = html.unescape(text or "")
    text = HTML_TAG.sub(" ", text)
    text = URL.sub(" ", text)
    text = ROLE_LABEL.sub("", text)
    return text.replace("’", "'").replace("‘", "'")


def _ends_at_abbreviation(text: str, end: int) -> bool:
    """Whether the period ending at `end` closes an abbreviation ("Dr.", "e.g.") or an initial ("J. K. Rowling")."""
    before = text[max(end - 40, 0) : end - 1].split()
    word = before[-1].lstrip("(\"'“‘") if before else ""
    if word.lower() in ABBREVIATIONS:
        return True
    if len(word) != 1 or not word.isupper():
        return False
    # An initial sits next to a name or another initial; "I got an A. So happy" still ends a sentence.
    previous = before[-2] if len(before) > 1 else ""
    return previous[:1].isupper() or NEXT_INITIAL.match(text, end) is not None


def _split_line(line: str) -> list[str]:
    """Sentences of one line, split after terminal punctuation that is not an abbreviation."""
    pieces, start = [], 0
    for match in SENTENCE_END.finditer(line):
        single_period = match.group().rstrip("\"'”’)]") == "."
        if single_period and _ends_at_abbreviation(line, match.start() + 1):
            continue
        pieces.append(line[start : match.end()])
        start = match.end()
    pieces.append(line[start:])
    return pieces


def split_sentences(text: str) -> list[str]:
    """The sentences of a text, split on . ! ? … and newlines; pieces without a letter or digit are dropped."""
    sentences = []
    for line in (text or "").splitlines():
        for piece in _split_line(line):
            piece = piece.strip()
            if any(char.isalnum() for char in piece):
                sentences.append(piece)
    return sentences


def _is_addressed_name(sentence: str, tokens: list[re.Match[str]], index: int) -> bool:
    """Whether a capitalised token is the listener's name said in passing ("Hey Mel,", "Thanks, Caroline!")."""
    token = tokens[index]
    after = NEXT_CHAR.match(sentence, token.end()).group(1)
    closes = after == "" or after in ",!?.…-—–"
    ends = after == "" or after in "!?.…"
    if index == 0:
        return closes
    previous = tokens[index - 1]
    opens = "," in sentence[previous.end() : token.start()] or previous.group().lower() in ADDRESS_OPENERS
    return opens and closes and (index <= 2 or ends)


def _is_stopword(word: str) -> bool:
    """Whether a lowercase token carries no topic: a stopword, a pronoun contraction, short, or a number."""
    if word in STOPWORDS or word.endswith(CONTRACTION_SUFFIXES):
        return True
    return len(word) < 3 or ORDINAL.fullmatch(word) is not None


def _sentence_words(sentence: str) -> list[_Word]:
    """The content words of one sentence, without stopwords and without names said to the listener."""
    tokens = list(TOKEN.finditer(sentence))
    words = []
    for index, token in enumerate(tokens):
        raw = token.group()
        capitalised = index > 0 and raw[0].isupper() and raw != "I" and not raw.startswith("I'")
        if raw[0].isupper() and _is_addressed_name(sentence, tokens, index):
            continue
        word = raw.lower()
        if word.endswith("in") and sentence[token.end() : token.end() + 1] == "'":
            word += "g"  # a dropped g: "thinkin'" is "thinking"
        if word.endswith("'s"):
            word = word[:-2]
        if not _is_stopword(word):
            words.append(_Word(word, capitalised))
    return words


def _singular(word: str) -> str:
    """The singular of a regular English plural; anything that is not clearly a plural is returned unchanged."""
    if word in IRREGULAR_SINGULARS:
        return IRREGULAR_SINGULARS[word]
    if len(word) < 4 or word in KEEP_AS_IS or not word.endswith("s") or word.endswith(("ss", "us", "is", "'s")):
        return word
    if word.endswith("ies"):
        return word[:-1] if word[:-1] in IE_NOUNS else word[:-3] + "y"
    if word.endswith(("sses", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith("ches"):
        return word[:-1] if word[:-1] in CHE_NOUNS else word[:-2]
    return word[:-1]


def _analyse(text: str) -> tuple[list[tuple[str, list[str]]], set[str]]:
    """Each sentence with its normalised content words, and the words that appeared capitalised mid-sentence.

    A word seen capitalised mid-sentence anywhere in the text keeps its surface form ("Paris", "James"), so a
    proper noun is never singularised; every other word is singularised.
    """
    sentences = [(sentence, _sentence_words(sentence)) for sentence in split_sentences(_clean(text))]
    proper = {word.surface for _, words in sentences for word in words if word.capitalised}
    analysed = []
    for sentence, words in sentences:
        normal = [word.surface if word.surface in proper else _singular(word.surface) for word in words]
        analysed.append((sentence, [word for word in normal if word not in STOPWORDS]))
    return analysed, proper


def _keyword_weights(analysed: list[tuple[str, list[str]]], proper: set[str]) -> dict[str, float]:
    """Weight of each content word: frequency, +1 for a proper noun, a mild bonus for length (insertion-ordered)."""
    counts: dict[str, int] = {}
    for _, words in analysed:
        for word in words:
            counts[word] = counts.get(word, 0) + 1
    return {
        word: count + (1.0 if word in proper else 0.0) + 0.05 * (min(len(word), 10) - 3)
        for word, count in counts.items()
    }


def extract_keywords(text: str, limit: int = 8) -> list[str]:
    """Up to `limit` distinct keywords of a text, most important first; ties go to the word seen first."""
    weights = _keyword_weights(*_analyse(text))
    order = {word: position for position, word in enumerate(weights)}
    ranked = sorted(weights, key=lambda word: (-weights[word], order[word]))
    return ranked[: max(limit, 0)]


def _trim(text: str, max_chars: int) -> str:
    """The text cut on a word boundary to at most `max_chars` characters, ending with "…" when cut."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return "…"[:max_chars]
    cut = text[: max_chars - 1]
    if " " in cut and not text[max_chars - 1].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-–—") + "…"


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
    analysed, proper = _analyse(text)
    if not analysed:
        return _trim(_clean(text), max_chars) or _trim(text, max_chars)
    weights = _keyword_weights(analysed, proper)
    scores = [_sentence_score(sentence, words, weights) for sentence, words in analysed]
    best = max(range(len(analysed)), key=lambda index: (scores[index], -index))
    return _trim(analysed[best][0], max_chars)


def _as_sentence(text: str) -> str:
    """The text with terminal punctuation, so that two joined pieces read as two sentences."""
    return text if text[-1:] in ".!?…" else text + "."


def chain_summary(previous_summary: str, topic: str, max_chars: int = 300) -> str:
    """A rolling extractive summary of a dialogue chain: where it started, then its latest topic."""
    first = next(iter(split_sentences(previous_summary)), "")
    topic = " ".join(topic.split())
    if not first or first.casefold().rstrip(".!?… ") in topic.casefold():
        return _trim(topic or first, max_chars)
    if not topic or topic.casefold().rstrip(".!?… ") in first.casefold():
        return _trim(first, max_chars)
    first = _trim(_as_sentence(first), max(max_chars - len(topic) - 1, max_chars // 2))
    return f"{first} {_trim(topic, max_chars - len(first) - 1)}".strip()


def continues(similarity: float | None, gap_seconds: float | None, threshold: float) -> bool:
    """Whether a page continues the previous one: same session (gap of two hours at most) and similar enough."""
    if similarity is None:
        return False
    if gap_seconds is not None and gap_seconds > NEW_SESSION_GAP_SECONDS:
        return False
    return similarity >= threshold


def _candidate_sentences(text: str, pattern: re.Pattern[str]) -> Iterable[tuple[str, int]]:
    """Statements (not questions) of at least four words that match `pattern`, with their content word count."""
    for sentence, words in _analyse(text)[0]:
        if sentence.rstrip("\"'”’)] ").endswith("?") or len(sentence.split()) < 4:
            continue
        if pattern.search(sentence) and len(words) >= 2:
            yield sentence, len(words)


def _facts(turns: Iterable[TurnText], who: str, pattern: re.Pattern[str]) -> list[str]:
    """Dated, quoted statements, deduplicated, at most ten (the richest), in the order they were said."""
    entries: list[tuple[int, str]] = []
    seen: set[str] = set()
    for turn in turns:
        text = turn.user_message if who == "user" else turn.assistant_reply
        for sentence, richness in _candidate_sentences(text, pattern):
            key = " ".join(sentence.casefold().split())
            if key not in seen:
                seen.add(key)
                entries.append((richness, _fact(turn.at, who, sentence)))
    richest = sorted(range(len(entries)), key=lambda index: -entries[index][0])[:MAX_FACTS_PER_CALL]
    return [entries[index][1] for index in sorted(richest)]


def _fact(at: datetime, who: str, sentence: str) -> str:
    """One self-contained fact line: the date, who said it, and the sentence quoted."""
    quoted = _trim(sentence, MAX_FACT_CHARS).replace('"', "'")
    return f'{at:%Y-%m-%d}: The {who} said: "{quoted}"'


def user_facts(turns: Iterable[TurnText]) -> list[str]:
    """Facts about the user: first-person statements in the user's messages (not questions, not trivia)."""
    return _facts(turns, "user", USER_FIRST_PERSON)


def assistant_facts(turns: Iterable[TurnText]) -> list[str]:
    """Facts about the assistant: what its replies say it did, will do, or recommends."""
    return _facts(turns, "assistant", ASSISTANT_COMMITMENT)


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
    """The profile with new facts appended (deduplicated, oldest dropped past `max_lines`); unchanged if none is new."""
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

    def profile_update(self, *, profile: str, pages: list[TurnText]) -> str:
        """The profile with the user's first-person statements from these pages merged in."""
        return profile_merge(profile, user_facts(pages))

    def knowledge_extract(self, *, pages: list[TurnText]) -> Facts:
        """First-person facts about the user and commitments of the assistant found in the pages."""
        return Facts(user=user_facts(pages), assistant=assistant_facts(pages))
