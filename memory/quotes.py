"""Finding copies of forgotten text in other text: normalised matching, replacement of the original spans.

Copies of what a user said are rarely exact: replies quote it re-spaced and cut at 180 characters with "…",
summaries trim it, facts swap its double quotes, stored API answers hold it JSON-escaped ("Z\\u00fcrich"). Both
sides are folded the same way (Unicode NFKD without accents, case, whitespace runs, quote marks, JSON escapes), a
copy is found in the folded text, and the matching span of the ORIGINAL text is replaced, so nothing around it
changes. Pure functions of plain strings and JSON values: no database.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from memory.text import split_sentences

QUOTE_MIN_WORDS = 4  # shorter sentences ("Thanks a lot!") are too common for a match to mean a quote
MIN_PREFIX_CHARS = 24  # a truncated copy must keep at least this much of the quote to count as one
REDACTED = "[forgotten]"
QUOTE_MARKS = frozenset("\"'`“”‘’«»„‚")
JSON_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([nrtbf\"\\/]))")
ESCAPED = {"n": " ", "r": " ", "t": " ", "b": " ", "f": " ", '"': "'", "\\": "\\", "/": "/"}
SENTENCE_END = ".!?;: "  # a copy may leave out a sentence's closing punctuation: "You like kiwis — you told me…"
CUT_BEFORE_ELLIPSIS = " ,;:-–—"  # what trimming strips before it appends "…" (memory.text.trim)
WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    """One character as matching sees it: whitespace is a space, quote marks one mark, no accents, case-folded."""
    if char.isspace():
        return " "
    if char in QUOTE_MARKS:
        return "'"
    decomposed = unicodedata.normalize("NFKD", char)  # also "…" -> "...", "ﬁ" -> "fi"
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@dataclass(frozen=True)
class Folded:
    """A text folded for matching, and where each of its characters came from in the original."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]


def fold(text: str) -> Folded:
    """The folded text: JSON escapes decoded, whitespace runs collapsed, each character mapped to its origin."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    position = 0
    while position < len(text):
        escape = JSON_ESCAPE.match(text, position) if text[position] == "\\" else None
        if escape:
            code, simple = escape.groups()
            folded, end = (_fold(chr(int(code, 16))) if code else ESCAPED[simple]), escape.end()
        else:
            folded, end = _fold(text[position]), position + 1
        for char in folded:
            if char == " " and (not out or out[-1] == " "):
                continue
            out.append(char)
            starts.append(position)
            ends.append(end)
        position = end
    return Folded("".join(out), tuple(starts), tuple(ends))


def _folded_plain(text: str) -> str:
    return fold(text).text.strip()


@dataclass(frozen=True)
class Quote:
    """A piece of forgotten text, folded; `anchor` is a plain word every copy holds (for a database prefilter)."""

    text: str
    anchor: str | None


def _anchor(text: str) -> str | None:
    """The longest plain ASCII word in the first characters of the original text: even a truncated, re-spaced or
    JSON-escaped copy keeps it verbatim (only its case may differ)."""
    head = " ".join(text.split())[:MIN_PREFIX_CHARS]
    words = [w for w in WORD.findall(head) if w.isascii() and len(w) >= 3]
    return max(words, key=len).lower() if words else None


def quote(text: str) -> Quote:
    return Quote(_folded_plain(text), _anchor(text))


def quotes_of(texts: Iterable[str]) -> list[Quote]:
    """The quotable pieces of `texts`: each whole text and each sentence of at least four words, longest first."""
    pieces = {}
    for text in texts:
        for piece in [text, *split_sentences(text)]:
            folded = _folded_plain(piece)
            if len(folded.split()) >= QUOTE_MIN_WORDS:
                pieces[folded] = Quote(folded, _anchor(piece))
    return sorted(pieces.values(), key=lambda q: -len(q.text))


def _after_ellipsis(text: str, end: int) -> int | None:
    """Where a copy cut at `end` ends, if an ellipsis follows (after what trimming strips); None otherwise."""
    position = end
    while position < len(text) and text[position] in CUT_BEFORE_ELLIPSIS:
        position += 1
    return position + 3 if text.startswith("...", position) else None


def _folded_spans(text: str, quote_text: str) -> Iterable[tuple[int, int]]:
    """Spans of `text` (folded) holding `quote_text` whole, or its first part cut with "…" or at the text's end."""
    head = quote_text[:MIN_PREFIX_CHARS]
    start = text.find(head)
    while start != -1:
        matched = len(head)
        while (
            matched < len(quote_text) and start + matched < len(text) and text[start + matched] == quote_text[matched]
        ):
            matched += 1
        end = start + matched
        if matched == len(quote_text) or end == len(text) or not quote_text[matched:].strip(SENTENCE_END):
            yield start, end  # whole, cut at the text's end, or whole but for its closing punctuation
        else:
            cut = _after_ellipsis(text, end)
            if cut is not None:
                yield start, cut
        start = text.find(head, start + 1)


def spans(text: str, quotes: Iterable[Quote]) -> list[tuple[int, int]]:
    """The spans of the original `text` that copy any of `quotes`, merged and in order."""
    folded = fold(text)
    found = []
    for q in quotes:
        for start, end in _folded_spans(folded.text, q.text):
            found.append((folded.starts[start], folded.ends[end - 1]))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def quotes_any(text: str, quotes: Iterable[Quote]) -> bool:
    return bool(text) and bool(spans(text, quotes))


def redact(text: str, quotes: Iterable[Quote]) -> str:
    """`text` with every copy of `quotes` replaced by "[forgotten]"; everything else untouched."""
    if not text:
        return text
    for start, end in reversed(spans(text, quotes)):
        text = text[:start] + REDACTED + text[end:]
    return text


def redact_json(value, quotes: list[Quote]):
    """A JSON value with every string (keys kept) redacted."""
    if isinstance(value, str):
        return redact(value, quotes)
    if isinstance(value, list):
        return [redact_json(item, quotes) for item in value]
    if isinstance(value, dict):
        return {key: redact_json(item, quotes) for key, item in value.items()}
    return value


def said_in(quote_text: str, text: str) -> bool:
    """Whether `text` holds the folded quote whole (someone else said it too)."""
    return quote_text in fold(text).text
