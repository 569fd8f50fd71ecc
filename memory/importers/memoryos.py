"""The reference MemoryOS's data of one user (BAI-LAB/MemoryOS) -> a memory bundle.

Input: the files of the user's directory (`<data_storage_path>/users/<user_id>/`), by name: `short_term.json` (a
list of QA pairs `{"user_input", "agent_response", "timestamp"}`), `mid_term.json` (`{"sessions": {id: {"id",
"summary", "summary_keywords", "details": [page], "N_visit", "L_interaction", "timestamp", "last_visit_time"}},
"access_frequency"}`, a page `{"page_id", "user_input", "agent_response", "timestamp", "analyzed", "pre_page",
"meta_info", "page_keywords"}`) and `long_term_user.json` (`{"user_profiles": {user_id: {"data", "last_updated"}},
"knowledge_base": [{"knowledge", "timestamp"}], "assistant_knowledge": [...]}`). Times are `%Y-%m-%d %H:%M:%S` in the
server's local time, read as UTC. Formats and what is dropped: docs/importing.md.
"""

from __future__ import annotations

from typing import Any

from memory.importers.common import (
    bundle_new,
    expect,
    facts_add,
    iso_time,
    page_new,
    profile_add,
    refuse,
    space_new,
    text_at,
)

SYSTEM = "memoryos"
SHORT_TERM, MID_TERM, LONG_TERM = "short_term.json", "mid_term.json", "long_term_user.json"
FILES = (SHORT_TERM, MID_TERM, LONG_TERM)
TIME = "%Y-%m-%d %H:%M:%S"  # memoryos utils.get_timestamp()
KEYWORDS, KEYWORD_CHARS = 64, 64  # the bundle schema's limits


def memoryos_bundle(files: dict, *, external_id: str, assistant: str = SYSTEM) -> dict:
    """The bundle of a user directory's parsed files (by file name) for the end user `external_id`, with the
    assistant `assistant`; BundleInvalid if one is malformed or none is there."""
    if not any(name in files for name in FILES):
        raise refuse("$", f"none of {', '.join(FILES)} is there: give a user's directory of the reference MemoryOS")
    bundle = bundle_new(external_id=external_id)
    segments, pages = _mid_term(files.get(MID_TERM, {"sessions": {}}))
    pages += _short_term(files.get(SHORT_TERM, []), first=len(pages) + 1)
    if pages:
        bundle["memory"].append(space_new(assistant, pages, segments))
    _long_term(bundle, files.get(LONG_TERM, {}), assistant)
    return bundle


def _short_term(pairs: object, *, first: int) -> list[dict]:
    """The recent QA pairs as short-term pages, after the mid-term ones."""
    pages: list[dict] = []
    for index, pair in enumerate(expect(pairs, list, f"{SHORT_TERM}:$", "a list of QA pairs")):
        path = f"{SHORT_TERM}:$[{index}]"
        pair = expect(pair, dict, path, "a QA pair")
        origin = {"system": SYSTEM, "id": f"short_term[{index}]"}
        pages.append(page_new(first + len(pages), origin=origin, **_turn(pair, path)))
    return pages


def _turn(item: dict, path: str) -> dict:
    return {
        "user": text_at(item, "user_input", path),
        "reply": text_at(item, "agent_response", path),
        "at": iso_time(item.get("timestamp"), f"{path}.timestamp", naive_format=TIME),
    }


def _mid_term(data: object) -> tuple[list[dict], list[dict]]:
    """Each session a segment and its pages mid-term pages of it, oldest first; page links kept as chains."""
    sessions = expect(
        expect(data, dict, f"{MID_TERM}:$", "an object").get("sessions", {}),
        dict,
        f"{MID_TERM}:$.sessions",
        "an object of sessions",
    )
    segments: list[dict] = []
    rows: list[tuple[dict, str, int]] = []
    for key, session in sessions.items():
        path = f"{MID_TERM}:$.sessions.{key}"
        session = expect(session, dict, path, "a session")
        segments.append(_segment(session, len(segments) + 1, path))
        details = expect(session.get("details", []), list, f"{path}.details", "a list of pages")
        rows += [
            (expect(p, dict, f"{path}.details[{i}]", "a page"), f"{path}.details[{i}]", len(segments))
            for i, p in enumerate(details)
        ]
    rows.sort(key=lambda row: _turn(row[0], row[1])["at"])
    pages = [_mid_page(page, path, number, segment) for number, (page, path, segment) in enumerate(rows, start=1)]
    _chains(pages, [page for page, _, _ in rows])
    return segments, pages


def _segment(session: dict, number: int, path: str) -> dict:
    touched = session.get("last_visit_time") or session.get("timestamp")
    segment = {
        "id": number,
        "summary": text_at(session, "summary", path, required=False)[:4000],
        "keywords": _keywords(session.get("summary_keywords"), f"{path}.summary_keywords"),
        "n_visit": _count(session.get("N_visit", 0), f"{path}.N_visit"),
        "l_interaction": _count(session.get("L_interaction", 0), f"{path}.L_interaction"),
        "last_touched_at": iso_time(touched, f"{path}.last_visit_time", naive_format=TIME),
    }
    if session.get("timestamp"):
        segment["created_at"] = iso_time(session["timestamp"], f"{path}.timestamp", naive_format=TIME)
    return segment


def _mid_page(page: dict, path: str, number: int, segment: int) -> dict:
    origin = {"system": SYSTEM, "id": str(page.get("page_id", ""))[:200]}
    row = page_new(number, origin=origin, tier="mtm", **_turn(page, path))
    meta = page.get("meta_info")
    return row | {
        "segment_id": segment,
        "keywords": _keywords(page.get("page_keywords"), f"{path}.page_keywords"),
        "analysed": page.get("analyzed") is True,
        **({"chain_summary": meta[:20000]} if isinstance(meta, str) else {}),
    }


def _chains(pages: list[dict], sources: list[dict]) -> None:
    """A page's `pre_page` becomes its previous page when that page is in the bundle and continues no other."""
    numbers = {str(source.get("page_id")): page["id"] for page, source in zip(pages, sources, strict=True)}
    used: set[int] = set()
    for page, source in zip(pages, sources, strict=True):
        previous = numbers.get(str(source.get("pre_page")))
        if previous and previous != page["id"] and previous not in used:
            page["previous_page_id"] = previous
            used.add(previous)


def _long_term(bundle: dict, data: object, assistant: str) -> None:
    """The user's profile as a profile version; user knowledge as user facts, assistant knowledge as the
    assistant's, each valid from when it was recorded."""
    long_term = expect(data, dict, f"{LONG_TERM}:$", "an object")
    profiles = expect(long_term.get("user_profiles", {}), dict, f"{LONG_TERM}:$.user_profiles", "an object of profiles")
    for key, profile in profiles.items():
        path = f"{LONG_TERM}:$.user_profiles.{key}"
        text = text_at(expect(profile, dict, path, "a profile"), "data", path, required=False)
        if text and text.lower() != "none":
            at = profile.get("last_updated")
            profile_add(bundle, text, at=iso_time(at, f"{path}.last_updated", naive_format=TIME) if at else None)
    facts_add(bundle, _facts(long_term.get("knowledge_base", []), "knowledge_base", kind="user", assistant=None))
    facts_add(
        bundle,
        _facts(long_term.get("assistant_knowledge", []), "assistant_knowledge", kind="assistant", assistant=assistant),
    )


def _facts(entries: object, key: str, *, kind: str, assistant: str | None) -> list[dict]:
    facts = []
    for index, entry in enumerate(expect(entries, list, f"{LONG_TERM}:$.{key}", "a list of knowledge")):
        path = f"{LONG_TERM}:$.{key}[{index}]"
        entry = expect(entry, dict, path, "a knowledge entry")
        fact: dict[str, Any] = {"kind": kind, "assistant": assistant, "text": text_at(entry, "knowledge", path)}
        fact["origin"] = {"system": SYSTEM, "id": f"{key}[{index}]"}
        if entry.get("timestamp"):
            at = iso_time(entry["timestamp"], f"{path}.timestamp", naive_format=TIME)
            fact |= {"valid_from": at, "created_at": at}
        facts.append(fact)
    return facts


def _keywords(value: object, path: str) -> list[str]:
    words = expect(value if value is not None else [], list, path, "a list of keywords")
    return [word[:KEYWORD_CHARS] for word in words if isinstance(word, str) and word][:KEYWORDS]


def _count(value: object, path: str) -> int:
    number = expect(value, (int, float), path, "a number")
    if number < 0 or number > 2**31 - 1:
        raise refuse(path, f"{number} is out of range")
    return int(number)
