"""The words of a search result that matched, marked: `<mark>` around each word that starts with one of the query's
stem prefixes (memory.selectors.search), everything else escaped, so hostile text in memory renders inert."""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WORD = re.compile(r"[^\W_]+")
BEFORE = 80  # characters kept before the first match in an excerpt


def matched_spans(text: str, prefixes: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each word of `text` that starts with one of `prefixes`, case ignored."""
    wanted = tuple(p.lower() for p in prefixes)
    if not wanted:
        return []
    return [m.span() for m in WORD.finditer(text) if m.group().lower().startswith(wanted)]


def highlight(text: str, prefixes: list[str], *, width: int = 400) -> SafeString:
    """At most `width` characters of `text` around its first match, escaped, with each matched word marked."""
    spans = matched_spans(text, prefixes)
    start = max(0, spans[0][0] - BEFORE) if spans and spans[0][1] > width else 0
    end = min(len(text), start + width)
    parts, at = ["…" if start else ""], start
    for span_start, span_end in spans:
        if span_start < start or span_end > end:
            continue
        parts += [escape(text[at:span_start]), "<mark>", escape(text[span_start:span_end]), "</mark>"]
        at = span_end
    parts += [escape(text[at:end]), "…" if end < len(text) else ""]
    return mark_safe("".join(parts))  # every piece of `text` above went through escape()
