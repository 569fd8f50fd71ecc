"""Word-level diffs between two profile versions (difflib), as spans a template marks up with <ins> and <del>."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from memory.models import ProfileVersion

TOKEN = re.compile(r"\s+|[^\s]+")


@dataclass(frozen=True)
class Span:
    op: str  # "equal", "insert" or "delete"
    text: str


@dataclass(frozen=True)
class ProfileDiff:
    old: ProfileVersion
    new: ProfileVersion
    spans: list[Span]

    @property
    def changed(self) -> bool:
        return any(span.op != "equal" for span in self.spans)


def text_diff(old: str, new: str) -> list[Span]:
    """The spans that turn `old` into `new`, word by word (whitespace kept, so line breaks survive)."""
    a, b = TOKEN.findall(old), TOKEN.findall(new)
    spans: list[Span] = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            spans.append(Span("delete", "".join(a[a1:a2])))
        if op in ("insert", "replace"):
            spans.append(Span("insert", "".join(b[b1:b2])))
        if op == "equal":
            spans.append(Span("equal", "".join(a[a1:a2])))
    return spans


def profile_diff(versions: list[ProfileVersion], a: int | None, b: int | None) -> ProfileDiff | None:
    """The diff from version `a` to version `b` (default: the previous version to the current one).

    `versions` is newest first; None when fewer than two versions exist or a number is unknown.
    """
    by_number = {v.number: v for v in versions}
    if len(versions) < 2:
        return None
    new = by_number.get(b) if b else versions[0]
    old = by_number.get(a) if a else next((v for v in versions if new and v.number < new.number), None)
    if old is None or new is None:
        return None
    return ProfileDiff(old=old, new=new, spans=text_diff(old.text, new.text))


@dataclass(frozen=True)
class LineDiff:
    """A pending profile version against the current one, line by line: `lines` are Spans of whole lines."""

    current: ProfileVersion | None
    lines: list[Span]

    @property
    def changed(self) -> bool:
        return any(line.op != "equal" for line in self.lines)


def line_diff(old: str, new: str) -> list[Span]:
    """The lines that turn `old` into `new`: each kept, removed ("delete") or added ("insert")."""
    a, b = old.splitlines(), new.splitlines()
    lines: list[Span] = []
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        lines += [Span("delete", line) for line in a[a1:a2] if op in ("delete", "replace")]
        lines += [Span("insert", line) for line in b[b1:b2] if op in ("insert", "replace")]
        lines += [Span("equal", line) for line in a[a1:a2] if op == "equal"]
    return lines


def pending_profile_diff(version: ProfileVersion, current: ProfileVersion | None) -> LineDiff:
    return LineDiff(current=current, lines=line_diff(current.text if current else "", version.text))
