"""General text helpers: cleaning, sentence splitting, tokenising, singularising and keyword extraction.

Pure functions of plain strings, with no network and no database. `extract_keywords` is both the offline steps' page
keyword extractor and the cheap local query keyword extractor of retrieval, so the same concept must yield the same
keyword form in every text.
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def text_refusal(text: str) -> str | None:
    """Why `text` can be neither stored nor sent on, or None: a NUL character (PostgreSQL's text holds none) or a
    lone surrogate (half of a UTF-16 pair: not Unicode, so not UTF-8). JSON can carry both (\\u0000, \\ud800)."""
    if "\x00" in text:
        return "contains a NUL character"
    if _LONE_SURROGATE.search(text):
        return "contains a lone surrogate (not valid Unicode)"
    return None


def word_set(words: str) -> frozenset[str]:
    """The whitespace-separated words of a string literal, as a set (long word lists stay readable)."""
    return frozenset(words.split())


STOPWORDS: frozenset[str] = word_set(
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
ABBREVIATIONS = word_set(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e eg ie a.m p.m approx dept est fig inc ltd co "
    "jan feb mar apr jun jul aug sep sept oct nov dec mt ft"
)

# Words that open a greeting or reaction before a name said to the listener ("Thanks, Mel!").
ADDRESS_OPENERS = word_set(
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
KEEP_AS_IS = word_set(
    "news lens series species means gas canvas atlas christmas alias bias texas vegas kansas arkansas chaos "
    "trans cosmos kudos ethos pathos physics mathematics economics politics athletics ethics gymnastics aerobics "
    "always perhaps yes its thus plus minus bonus corps diabetes rabies measles mumps scabies shingles herpes "
    "clothes"
)

# Nouns ending in -che whose plural must not lose the final e ("headaches" -> "headache", not "headach").
CHE_NOUNS = word_set("ache headache niche cache avalanche moustache mustache psyche quiche cliche")

# Nouns ending in -ie whose plural must not become -y ("movies" -> "movie", not "movy").
IE_NOUNS = word_set(
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


@dataclass(frozen=True)
class _Word:
    """One content word of a sentence: its lowercase surface form and whether it looked like a proper noun."""

    surface: str
    capitalised: bool


def clean_text(text: str) -> str:
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
    next_char = NEXT_CHAR.match(sentence, token.end())
    assert next_char is not None  # NEXT_CHAR matches anywhere: its characters are optional
    after = next_char.group(1)
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


def analyse(text: str) -> tuple[list[tuple[str, list[str]]], set[str]]:
    """Each sentence with its normalised content words, and the words that appeared capitalised mid-sentence.

    A word seen capitalised mid-sentence anywhere in the text keeps its surface form ("Paris", "James"), so a
    proper noun is never singularised; every other word is singularised.
    """
    sentences = [(sentence, _sentence_words(sentence)) for sentence in split_sentences(clean_text(text))]
    proper = {word.surface for _, words in sentences for word in words if word.capitalised}
    analysed = []
    for sentence, words in sentences:
        normal = [word.surface if word.surface in proper else _singular(word.surface) for word in words]
        analysed.append((sentence, [word for word in normal if word not in STOPWORDS]))
    return analysed, proper


def keyword_weights(analysed: list[tuple[str, list[str]]], proper: set[str]) -> dict[str, float]:
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
    weights = keyword_weights(*analyse(text))
    order = {word: position for position, word in enumerate(weights)}
    ranked = sorted(weights, key=lambda word: (-weights[word], order[word]))
    return ranked[: max(limit, 0)]


def trim(text: str, max_chars: int) -> str:
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


def text_hash(text: str) -> str:
    """The identity of a fact's text for duplicate detection (whitespace- and case-insensitive)."""
    return hashlib.sha256(" ".join(text.lower().split()).encode()).hexdigest()


# --- Passages of long pages ---------------------------------------------------------------------------------------

# MiniLM reads about 256 word pieces of a text (roughly 1,000 characters of English, fewer of code); a page longer
# than that is also embedded in overlapping windows, so that every part of it can be found (PagePassage).
PASSAGE_CHARS = 1000
PASSAGE_OVERLAP = 200
# Where a window may end, best first: after a blank line, after a line, after a sentence, after a word.
_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?;:](?=\s)\s*"), re.compile(r"\s+"))
# Where the next window may start, best first: at a line (past blank ones), a sentence, a word.
_STARTS = (re.compile(r"\n(?:[ \t]*\n)*"), _BREAKS[2], _BREAKS[3])


def _last_break(text: str, low: int, high: int) -> int:
    """The end of the last separator of the best kind in text[low:high], or `high` when there is none."""
    for pattern in _BREAKS:
        ends = [m.end() for m in pattern.finditer(text, low, high)]
        if ends and ends[-1] > low:
            return ends[-1]
    return high


def _first_break(text: str, low: int, high: int) -> int:
    """The end of the first line or sentence (else word) separator in text[low:high], or `low` when there is none."""
    for pattern in _STARTS:
        found = pattern.search(text, low, high)
        if found is not None and found.end() < high:
            return found.end()
    return low


def passage_spans(text: str, *, size: int = PASSAGE_CHARS, overlap: int = PASSAGE_OVERLAP) -> list[tuple[int, int]]:
    """The (start, end) character spans of a long text's overlapping passages; none when it fits in one.

    Each passage is at most `size` characters, ends at a paragraph, line, sentence or word boundary where one lies
    in its second half (so code keeps whole lines), and starts at a line, sentence or word boundary within `overlap`
    characters before the previous one's end. Deterministic: the same text always gives the same spans.
    """
    if len(text) <= size:
        return []
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        if len(text) - start <= size:
            spans.append((start, len(text)))
            return spans
        end = _last_break(text, start + size // 2, start + size)
        spans.append((start, end))
        start = max(_first_break(text, end - overlap, end), start + 1)


def passage_span_at(text: str, start: int) -> tuple[int, int] | None:
    """The span of the passage of `text` that starts at `start`, if there is one."""
    return next(((s, e) for s, e in passage_spans(text) if s == start), None)


def passage_holding(text: str, query: str) -> tuple[int, int] | None:
    """The span of the first passage of a long text that holds `query` (case ignored), else of the one holding the
    most of its words; None for a text that fits in one passage, or that holds none of them."""
    needle = query.strip().casefold()
    spans = passage_spans(text) if needle else []
    folded = [text[start:end].casefold() for start, end in spans]  # per passage: casefolding may change lengths
    exact = next((span for span, passage in zip(spans, folded, strict=True) if needle in passage), None)
    if exact is not None or not spans:
        return exact
    words = set(re.findall(r"\w+", needle))
    held = [len(words & set(re.findall(r"\w+", passage))) for passage in folded]
    best = max(range(len(spans)), key=lambda index: held[index])
    return spans[best] if held[best] else None
