"""Importers from other memory systems: each maps that system's export to a memory bundle, which then goes through
the bundle import unchanged (dry run, do-not-store policy, review mode, fingerprint). docs/importing.md.

Every refusal is a BundleInvalid naming where in the source and why, as for a bundle.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import cast

from django.conf import settings

from memory.bundles import BundleInvalid, bundle_parse
from memory.importers.letta import letta_bundle
from memory.importers.mem0 import mem0_bundle
from memory.importers.memoryos import FILES, memoryos_bundle

BUNDLE = "bundle"
FORMATS = {
    BUNDLE: "MemoryOS bundle (export.json or the export's zip)",
    "mem0": "mem0 export (get_all JSON)",
    "letta": "Letta agent file (.af)",
    "memoryos": "Reference MemoryOS user directory (zip, or JSON by file name)",
}


def bundle_from(source_format: str, data: object, *, external_id: str) -> dict:
    """The bundle of `data`, parsed JSON in `source_format` (a bundle is returned as it is); BundleInvalid if the
    format is unknown or the data malformed."""
    if source_format == BUNDLE:
        return cast(dict, data)  # checked against the bundle schema when imported
    if source_format == "mem0":
        return mem0_bundle(data, external_id=external_id)
    if source_format == "letta":
        return letta_bundle(data, external_id=external_id)
    if source_format == "memoryos":
        files = data if isinstance(data, dict) else None
        if files is None:
            raise BundleInvalid("$", "expected the user directory's files as an object by file name")
        return memoryos_bundle(files, external_id=external_id)
    raise BundleInvalid("$", f"unknown format {source_format!r}; one of {', '.join(FORMATS)}")


def bundle_from_bytes(source_format: str, raw: bytes, *, external_id: str) -> dict:
    """The bundle of an uploaded file: a bundle (or export zip), a mem0 export, an .af, or a reference MemoryOS
    user directory as a zip. Refused past MEMORY_IMPORT_MAX_BYTES, as a bundle is."""
    if source_format == "memoryos" and raw[:4] == b"PK\x03\x04":
        return memoryos_bundle(_zip_files(raw), external_id=external_id)
    return bundle_from(source_format, bundle_parse(raw), external_id=external_id)


def bundle_from_path(source_format: str, path: Path, *, external_id: str) -> dict:
    """The bundle of a file, or for the reference MemoryOS a user's directory; OSError when it cannot be read."""
    if source_format == "memoryos" and path.is_dir():
        return memoryos_bundle(_directory_files(path), external_id=external_id)
    return bundle_from_bytes(source_format, _read(path, settings.MEMORY_IMPORT_MAX_BYTES), external_id=external_id)


def _read(path: Path, limit: int) -> bytes:
    """At most one byte past `limit`, so a huge file is refused without reading it."""
    with path.open("rb") as handle:
        return handle.read(limit + 1)


def _directory_files(directory: Path) -> dict:
    """The user directory's files that are there, parsed; their sizes together within the limit."""
    limit, files = settings.MEMORY_IMPORT_MAX_BYTES, {}
    for name in FILES:
        if (directory / name).is_file():
            raw = _read(directory / name, limit)
            limit -= len(raw)
            files[name] = _parsed(name, raw, limit)
    return files


def _zip_files(raw: bytes) -> dict:
    """The user directory's files from a zip (by name, at any depth), refusing one that unpacks past the limit."""
    limit, files = settings.MEMORY_IMPORT_MAX_BYTES, {}
    if len(raw) > limit:
        raise BundleInvalid("$", f"the file is {len(raw)} bytes; the limit is {limit} (MEMORY_IMPORT_MAX_BYTES)")
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            for info in archive.infolist():
                name = info.filename.rsplit("/", 1)[-1]
                if name in FILES and name not in files:
                    if info.file_size > limit:
                        raise BundleInvalid(name, f"unpacks past the limit of {limit} bytes (MEMORY_IMPORT_MAX_BYTES)")
                    with archive.open(info) as member:
                        data = member.read(limit + 1)
                    limit -= len(data)
                    files[name] = _parsed(name, data, limit)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, RuntimeError) as exc:
        raise BundleInvalid("$", f"not a readable zip: {exc}") from None
    return files


def _parsed(name: str, raw: bytes, left: int) -> object:
    if left < 0:
        limit = settings.MEMORY_IMPORT_MAX_BYTES
        raise BundleInvalid(name, f"the files are larger together than {limit} bytes (MEMORY_IMPORT_MAX_BYTES)")
    try:
        return bundle_parse(raw)
    except BundleInvalid as exc:
        raise BundleInvalid(f"{name}:{exc.path}", exc.reason) from None
