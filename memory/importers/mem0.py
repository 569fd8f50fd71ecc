"""mem0's memories of one user -> a memory bundle: each memory a user fact, valid from its created_at.

Input: what mem0's `Memory.get_all(user_id=...)` (open source, `{"results": [MemoryItem, ...]}`) or the platform's
`client.get_all(...)` (v1: a list of memories) returns, saved as JSON. A memory holds `id`, `memory` (the text),
`hash`, `metadata`, `categories` (platform), `created_at`, `updated_at`, `user_id`, `agent_id`, `run_id`.
Formats and what is dropped: docs/importing.md.
"""

from __future__ import annotations

from typing import Any

from memory.importers.common import bundle_new, expect, facts_add, iso_time, refuse, text_at

SYSTEM = "mem0"


def mem0_bundle(data: object, *, external_id: str) -> dict:
    """The bundle of `data` (a parsed mem0 export) for the end user `external_id`; BundleInvalid if malformed."""
    memories, path = _memories(data)
    bundle = bundle_new(external_id=external_id)
    facts_add(
        bundle, [_fact(expect(m, dict, f"{path}[{i}]", "a memory"), f"{path}[{i}]") for i, m in enumerate(memories)]
    )
    return bundle


def _memories(data: object) -> tuple[list, str]:
    if isinstance(data, dict):
        if "results" not in data:
            raise refuse("$", "a mem0 export is a list of memories or an object with `results`")
        return expect(data["results"], list, "$.results", "a list of memories"), "$.results"
    return expect(data, list, "$", "a list of memories or an object with `results`"), "$"


def _fact(memory: dict, path: str) -> dict:
    """A user fact: the memory's text, valid from when it was made; its id names where it came from."""
    memory_id = text_at(memory, "id", path)
    created = iso_time(memory["created_at"], f"{path}.created_at") if memory.get("created_at") else None
    fact: dict[str, Any] = {"kind": "user", "assistant": None, "text": text_at(memory, "memory", path)}
    fact["origin"] = {"system": SYSTEM, "id": memory_id[:200]}
    return fact | ({"valid_from": created, "created_at": created} if created else {})
