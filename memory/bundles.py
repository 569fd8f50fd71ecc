"""Memory bundles (a GDPR export's export.json) read for import: bounded parsing, the JSON schema, and the checks
a schema cannot express (references between ids, limits of this installation).

Pure: no database. Every refusal is a BundleInvalid naming the first problem: where in the JSON (`$.memory[0].
pages[3].at`) and why. The schema is memory/schemas/memory-bundle-1.schema.json, documented in docs/memory-bundle.md.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import cast

from django.conf import settings
from jsonschema import Draft202012Validator, FormatChecker

from memory.timeframes import too_far_ahead

SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "memory-bundle-1.schema.json"
BUNDLE_FORMAT = "memoryos-export/1"
SCHEMA_VERSION = 1
MAX_DEPTH = 32  # the deepest part of a bundle (a page's keywords) is 5 levels down
REASON_CHARS = 300  # a schema message quotes the offending value; a hostile one may be huge
ZIP_MEMBER = "export.json"


class BundleInvalid(ValueError):
    """The bundle is refused whole; `path` says where (a JSONPath such as `$.knowledge[2].text`), `reason` why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
        super().__init__(f"{self.path}: {self.reason}")


# --- Parsing ----------------------------------------------------------------------------------------------------


def bundle_parse(raw: bytes) -> dict:
    """The bundle in `raw`: export.json's bytes, or the export's zip (its export.json is read).

    Refuses (BundleInvalid at `$`) more than MEMORY_IMPORT_MAX_BYTES (zipped or not), text that is not UTF-8 JSON,
    NaN or Infinity, and nesting deeper than MAX_DEPTH, before anything else looks at it.
    """
    limit = settings.MEMORY_IMPORT_MAX_BYTES
    if len(raw) > limit:
        raise BundleInvalid("$", f"the bundle is {len(raw)} bytes; the limit is {limit} (MEMORY_IMPORT_MAX_BYTES)")
    if raw[:4] == b"PK\x03\x04":
        raw = _zip_member(raw, limit)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BundleInvalid("$", f"not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BundleInvalid("$", f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BundleInvalid("$", f"not JSON: {exc}") from None
    _depth_check(data)
    return data


def _zip_member(raw: bytes, limit: int) -> bytes:
    """export.json from an export zip, refusing one that would unpack past the size limit (a zip bomb)."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as bundle:
            info = bundle.getinfo(ZIP_MEMBER)
            if info.file_size > limit:
                unpacked = f"{ZIP_MEMBER} unpacks to {info.file_size} bytes"
                raise BundleInvalid("$", f"{unpacked}; the limit is {limit} (MEMORY_IMPORT_MAX_BYTES)")
            with bundle.open(info) as member:
                data = member.read(limit + 1)
    except KeyError:
        raise BundleInvalid("$", f"the zip holds no {ZIP_MEMBER}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError) as exc:
        raise BundleInvalid("$", f"not a readable zip: {exc}") from None
    if len(data) > limit:
        raise BundleInvalid("$", f"{ZIP_MEMBER} is larger than the limit of {limit} bytes (MEMORY_IMPORT_MAX_BYTES)")
    return data


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _depth_check(data) -> None:
    """Refuse nesting past MAX_DEPTH, walked without recursion; names the first container too deep."""
    stack = [(data, "$", 1)]
    while stack:
        value, path, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise BundleInvalid(path, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((child, f"{path}.{key}", depth + 1) for key, child in value.items())
        else:
            stack.extend((child, f"{path}[{index}]", depth + 1) for index, child in enumerate(value))


# --- Validation -------------------------------------------------------------------------------------------------


@cache
def bundle_schema() -> dict:
    """The bundle's JSON schema (version 1)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


FORMATS = FormatChecker(formats=())


@FORMATS.checks("date-time", raises=ValueError)
def _is_timestamp(value: object) -> bool:
    if not isinstance(value, str):
        return True  # the type keyword names that problem
    return timestamp(value) is not None


def timestamp(value: str) -> datetime:
    """An ISO 8601 time with its UTC offset; ValueError without one."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no UTC offset")
    return parsed


def bundle_validate(bundle: object, *, now: datetime) -> None:
    """Raise BundleInvalid for the first problem: the schema first, then references and this installation's limits.

    After it passes, every page, segment and fact can be written: ids are unique, each reference (a page's segment
    and previous page, a fact's source pages and the fact that superseded it) names an object of the bundle, every
    text fits, and no page is
    dated more than a day after `now` (memory.timeframes.too_far_ahead, as for a turn).
    """
    errors = sorted(Draft202012Validator(bundle_schema(), format_checker=FORMATS).iter_errors(bundle), key=_order)
    if errors:
        raise BundleInvalid(errors[0].json_path, errors[0].message)
    checked = cast(dict, bundle)  # the schema requires an object
    _text_check(checked)
    page_spaces = _spaces_check(checked["memory"], now)
    _profile_check(checked["profile_versions"])
    _knowledge_check(checked["knowledge"], page_spaces)


def _order(error) -> list[tuple[int, object]]:
    """Document order of an error's location (list indexes as numbers, keys as text)."""
    return [(0, part) if isinstance(part, int) else (1, str(part)) for part in error.absolute_path]


def _text_check(bundle: dict) -> None:
    """Every string can be stored in PostgreSQL: no NUL character, no lone surrogate (JSON allows both)."""
    stack: list[tuple[object, str]] = [(bundle, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((child, f"{path}.{key}") for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(value))
        elif isinstance(value, str):
            if "\x00" in value:
                raise BundleInvalid(path, "contains a NUL character, which cannot be stored")
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise BundleInvalid(path, "contains a lone surrogate, which is not text") from None


def _spaces_check(spaces: list[dict], now: datetime) -> dict[int, int]:
    """Check each space's pages and segments; returns every page id with the index of its space."""
    page_spaces: dict[int, int] = {}
    assistants: set[str] = set()
    segment_ids: set[int] = set()
    for index, space in enumerate(spaces):
        path = f"$.memory[{index}]"
        name = space["assistant"]["external_id"]
        if name in assistants:
            raise BundleInvalid(f"{path}.assistant.external_id", f"a second memory space with assistant {name!r}")
        assistants.add(name)
        for position, segment in enumerate(space["segments"]):
            if segment["id"] in segment_ids:
                raise BundleInvalid(f"{path}.segments[{position}].id", f"segment id {segment['id']} appears twice")
            segment_ids.add(segment["id"])
        own_segments = {segment["id"] for segment in space["segments"]}
        _pages_check(space["pages"], path, own_segments, page_spaces, index)
        _pages_dated_check(space["pages"], path, now)
    return page_spaces


def _pages_check(pages: list[dict], path: str, segments: set[int], page_spaces: dict[int, int], space: int) -> None:
    limit = settings.MEMORY_MESSAGE_MAX_CHARS
    seqs: set[int] = set()
    own = {page["id"] for page in pages}
    previous_used: set[int] = set()
    for position, page in enumerate(pages):
        here = f"{path}.pages[{position}]"
        if page["id"] in page_spaces:
            raise BundleInvalid(f"{here}.id", f"page id {page['id']} appears twice")
        page_spaces[page["id"]] = space
        if page["seq"] in seqs:
            raise BundleInvalid(f"{here}.seq", f"seq {page['seq']} appears twice in this memory space")
        seqs.add(page["seq"])
        for field in ("user_message", "assistant_reply"):
            if len(page[field]) > limit:
                raise BundleInvalid(f"{here}.{field}", f"longer than {limit} characters (MEMORY_MESSAGE_MAX_CHARS)")
        segment = page.get("segment_id")
        if segment is not None and page["tier"] == "stm":
            raise BundleInvalid(f"{here}.segment_id", "a short-term page belongs to no segment")
        if segment is not None and segment not in segments:
            raise BundleInvalid(f"{here}.segment_id", f"no segment {segment} in this memory space")
        previous = page.get("previous_page_id")
        if previous is not None:
            if previous not in own or previous == page["id"]:
                raise BundleInvalid(f"{here}.previous_page_id", f"no other page {previous} in this memory space")
            if previous in previous_used:
                raise BundleInvalid(f"{here}.previous_page_id", f"page {previous} already continues another chain")
            previous_used.add(previous)


def _pages_dated_check(pages: list[dict], path: str, now: datetime) -> None:
    for position, page in enumerate(pages):
        if too_far_ahead(timestamp(page["at"]), now=now):
            raise BundleInvalid(f"{path}.pages[{position}].at", "more than a day in the future")


def _profile_check(versions: list[dict]) -> None:
    numbers: set[int] = set()
    for position, version in enumerate(versions):
        if version["number"] in numbers:
            raise BundleInvalid(f"$.profile_versions[{position}].number", f"version {version['number']} appears twice")
        numbers.add(version["number"])


def _knowledge_check(knowledge: list[dict], page_spaces: dict[int, int]) -> None:
    seen: set[tuple] = set()
    ids: set[int] = set()
    for position, entry in enumerate(knowledge):
        if entry["id"] in ids:
            raise BundleInvalid(f"$.knowledge[{position}].id", f"fact id {entry['id']} appears twice")
        ids.add(entry["id"])
    for position, entry in enumerate(knowledge):
        here = f"$.knowledge[{position}]"
        replacing = entry.get("superseded_by")
        if replacing is not None and (replacing not in ids or replacing == entry["id"]):
            raise BundleInvalid(f"{here}.superseded_by", f"no other fact {replacing} in this bundle")
        assistant = entry.get("assistant")
        if (entry["kind"] == "user") != (assistant is None):
            raise BundleInvalid(f"{here}.assistant", "user knowledge names no assistant; assistant knowledge names one")
        key = (entry["kind"], assistant, " ".join(entry["text"].lower().split()))  # as knowledge is deduplicated
        if key in seen:
            raise BundleInvalid(f"{here}.text", "the same fact appears twice")
        seen.add(key)
        for index, page_id in enumerate(entry.get("source_page_ids", [])):
            if page_id not in page_spaces:
                raise BundleInvalid(f"{here}.source_page_ids[{index}]", f"no page {page_id} in this bundle")


VECTORS = frozenset({"embedding", "passages"})  # a page's vectors, and its passages' (spans and vectors)


def bundle_fingerprint(bundle: dict) -> str:
    """sha256 of the bundle's memory (spaces, profile, knowledge) as canonical JSON, without embeddings.

    The export's date, its audit record and the vectors (which depend on the exporting installation's model) are
    left out, so exporting the same memory twice gives the same fingerprint.
    """
    memory = {
        "memory": [
            {**space, "pages": [{k: v for k, v in p.items() if k not in VECTORS} for p in space["pages"]]}
            for space in bundle["memory"]
        ],
        "profile_versions": bundle["profile_versions"],
        "knowledge": bundle["knowledge"],
    }
    canonical = json.dumps(memory, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
