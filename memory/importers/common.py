"""What every importer shares: the bundle's skeleton, times, and the refusal a malformed export gets.

Pure: no database. Each importer maps another system's export to a memory bundle (docs/memory-bundle.md), which the
bundle import then validates and imports unchanged; docs/importing.md says what maps to what.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory.bundles import BUNDLE_FORMAT, SCHEMA_VERSION, BundleInvalid

FACT_CHARS = 4000  # the bundle schema's limit on a fact's text
PROFILE_CHARS = 20000  # ... and on a profile version's


def refuse(path: str, reason: str) -> BundleInvalid:
    """The refusal of a malformed export: where in the source (`$.results[2].memory`) and why."""
    return BundleInvalid(path, reason)


def expect(value: object, kind: type | tuple[type, ...], path: str, what: str):
    """`value` when it is a `kind`; otherwise a refusal naming `what` was expected at `path`."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise refuse(path, f"expected {what}, found {type(value).__name__}")
    return value


def text_at(item: dict, key: str, path: str, *, required: bool = True) -> str:
    """The stripped text of `item[key]`; a refusal when it is required and missing, empty or not text."""
    value = item.get(key)
    if value is None and not required:
        return ""
    text = expect(value, str, f"{path}.{key}", "text").strip()
    if required and not text:
        raise refuse(f"{path}.{key}", "is empty")
    return text


def iso_time(value: object, path: str, *, naive_format: str | None = None) -> str:
    """An ISO 8601 time with its UTC offset; a time without one is read as UTC (the source's clock is unknown).

    `naive_format` parses a source's own format (the reference MemoryOS writes `%Y-%m-%d %H:%M:%S`).
    """
    text = expect(value, str, path, "a time")
    try:
        parsed = datetime.strptime(text, naive_format) if naive_format else datetime.fromisoformat(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise refuse(path, f"{text[:40]!r} is not a time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()


def bundle_new(*, external_id: str) -> dict:
    """An empty bundle for the end user `external_id` of the source system."""
    return {
        "format": BUNDLE_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "end_user": {"external_id": external_id[:128]},
        "memory": [],
        "profile_versions": [],
        "knowledge": [],
    }


def space_new(assistant: str, pages: list[dict], segments: list[dict] | None = None) -> dict:
    return {"assistant": {"external_id": assistant[:128]}, "pages": pages, "segments": segments or []}


def page_new(number: int, *, user: str, reply: str, at: str, origin: dict, tier: str = "stm") -> dict:
    """Page `number` (its id and seq): one turn, with where it came from (kept in the page's source_meta)."""
    return {
        "id": number,
        "seq": number,
        "at": at,
        "tier": tier,
        "user_message": user,
        "assistant_reply": reply,
        "origin": origin,
    }


def facts_add(bundle: dict, facts: list[dict]) -> None:
    """Append facts, numbered after the bundle's, skipping one the bundle already states (the bundle refuses a
    repeated fact) and cutting a text past the schema's limit."""
    seen = {(f["kind"], f.get("assistant"), _fold(f["text"])) for f in bundle["knowledge"]}
    for fact in facts:
        fact = fact | {"text": fact["text"][:FACT_CHARS]}
        key = (fact["kind"], fact.get("assistant"), _fold(fact["text"]))
        if key in seen:
            continue
        seen.add(key)
        bundle["knowledge"].append({"id": len(bundle["knowledge"]) + 1, **fact})


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def profile_add(bundle: dict, text: str, *, at: str | None) -> None:
    """The user's profile as one version written by the system (the source's own text, cut to the limit)."""
    version = {"number": len(bundle["profile_versions"]) + 1, "text": text[:PROFILE_CHARS], "author": "system"}
    bundle["profile_versions"].append(version | ({"created_at": at} if at else {}))
