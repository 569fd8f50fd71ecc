"""The documentation's links hold: every relative link in README.md, CONTRIBUTING.md and docs/ names a file that
exists, and a `#fragment` names a heading of its page; every docs/ path the source names exists."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", flags=re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", flags=re.MULTILINE)
DOCS_PATH_IN_SOURCE = re.compile(r"\bdocs/[\w./-]*\w\.md\b")
EXTERNAL = ("http://", "https://", "mailto:")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced blocks and inline code, where brackets are code, not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lowercase, code and links as their text, punctuation dropped, spaces to
    hyphens (letters, marks, digits, `_` and `-` kept)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    kept = (ch for ch in text if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc")
    return "".join(kept).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor of a page; a repeated heading gets -1, -2… as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, text: str) -> list[str]:
    """The relative links of one page whose file does not exist or whose fragment names no heading there."""
    broken = []
    for target in LINK.findall(prose(text)):
        if target.startswith(EXTERNAL):
            continue
        path_part, _, fragment = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved.read_text()):
            broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    return broken


def source_files() -> Iterable[Path]:
    for folder in ("memory", "chat", "dashboard", "api", "integrations", "memoryos_site", "evaluation", "tests"):
        yield from (ROOT / folder).rglob("*.py")


def missing_docs_named_in(files: Iterable[Path]) -> list[str]:
    """`docs/….md` paths named in source files (comments, docstrings, messages) that do not exist."""
    return sorted(
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {name}"
        for path in files
        for name in set(DOCS_PATH_IN_SOURCE.findall(path.read_text()))
        if not (ROOT / name).exists()
    )


def test_every_relative_link_in_the_docs_resolves():
    assert [problem for page in markdown_files() for problem in broken_links(page, page.read_text())] == []


def test_every_docs_page_the_source_names_exists():
    assert missing_docs_named_in(source_files()) == []


def test_the_link_check_catches_a_missing_file_and_a_missing_heading():
    page = ROOT / "docs" / "results.md"
    text = "[ok](scaling.md) [gone](nowhere.md) [ok](#load-test) [bad](scaling.md#no-such-part) `[code](x.md)`"

    assert broken_links(page, text + "\n\n## Load test\n") == [
        "docs/results.md: nowhere.md (no such file)",
        "docs/results.md: scaling.md#no-such-part (no such heading)",
    ]


def test_anchors_are_made_as_github_makes_them():
    text = "# Scale benchmark (`memory_bench`)\n## Retrieval through HTTP, 24–25 November 2026\n## Tests\n## Tests\n"

    assert anchors(text) == {
        "scale-benchmark-memory_bench",
        "retrieval-through-http-2425-november-2026",
        "tests",
        "tests-1",
    }


def test_the_source_check_catches_a_missing_decision_record(tmp_path):
    source = tmp_path / "x.py"
    missing = "docs/decisions/" + "9999-nothing.md"  # spelt in two parts, so this file names no missing page itself
    source.write_text(f"# see docs/decisions/0001-score-fusion.md and {missing}\n")

    assert missing_docs_named_in([source]) == [f"{source}: {missing}"]
