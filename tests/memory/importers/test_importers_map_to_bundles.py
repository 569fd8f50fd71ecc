"""Each importer maps its fixture (tests/data/importers/, hand-written from the documented formats) to a bundle that
validates, and names the problem of a malformed export."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.bundles import BundleInvalid, bundle_validate
from memory.importers import bundle_from, bundle_from_path

DATA = Path(__file__).resolve().parents[2] / "data" / "importers"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def of(source_format: str, name: str) -> dict:
    return bundle_from_path(source_format, DATA / name, external_id="alice")


def test_a_mem0_export_becomes_user_facts_valid_from_their_creation():
    bundle = of("mem0", "mem0_export.json")

    bundle_validate(bundle, now=NOW)
    assert [f["text"] for f in bundle["knowledge"]][:2] == ["Is travelling to Paris in June", "Is vegetarian"]
    first = bundle["knowledge"][0]
    assert first["kind"] == "user" and first["assistant"] is None
    assert first["valid_from"] == "2025-02-25T23:57:00.108347-07:00"
    assert first["origin"] == {"system": "mem0", "id": "f38b689d-6b24-45b7-bced-17fbb4d8bac7"}
    assert bundle["memory"] == [] and bundle["profile_versions"] == []


def test_a_mem0_list_as_the_platform_answers_maps_the_same():
    listed = json.loads((DATA / "mem0_export.json").read_text())["results"]

    assert bundle_from("mem0", listed, external_id="alice") == of("mem0", "mem0_export.json")


def test_a_letta_agent_file_gives_the_human_block_as_profile_and_message_pairs_as_turns():
    bundle = of("letta", "letta_agent.af")

    bundle_validate(bundle, now=NOW)
    assert bundle["profile_versions"][0]["text"].startswith("First name: Chad")
    pages = bundle["memory"][0]["pages"]
    assert bundle["memory"][0]["assistant"]["external_id"] == "ava"
    assert [(p["user_message"][:9], p["assistant_reply"][:9]) for p in pages] == [
        ("Hi, I'm C", "Nice to m"),
        ("Mostly sa", "Sailing a"),
    ]
    assert pages[0]["origin"] == {"system": "letta", "id": "message-1"}
    assert "Sam" not in json.dumps(bundle)  # the persona block is the agent's, not the user's


def test_a_reference_memoryos_directory_gives_segments_pages_profile_and_facts():
    bundle = of("memoryos", "memoryos_user")

    bundle_validate(bundle, now=NOW)
    space = bundle["memory"][0]
    assert [p["tier"] for p in space["pages"]] == ["mtm", "mtm", "stm", "stm"]
    assert space["segments"][0]["n_visit"] == 3 and space["segments"][0]["keywords"] == ["yoga", "back pain"]
    assert space["pages"][1]["previous_page_id"] == 1 and space["pages"][0]["analysed"] is True
    assert space["pages"][0]["at"] == "2025-06-01T09:00:00+00:00"
    assert space["pages"][0]["origin"] == {"system": "memoryos", "id": "page_aa11bb22"}
    assert bundle["profile_versions"][0]["text"].startswith("Works long days")
    assert [f["text"] for f in bundle["knowledge"]] == [
        "Has back pain from desk work",
        "Goes to yoga class on Tuesdays at 7 pm",
    ]


@pytest.mark.parametrize(
    ("source_format", "data", "where", "why"),
    [
        ("mem0", {"memories": []}, "$", "an object with `results`"),
        ("mem0", {"results": [{"id": "m1", "memory": ""}]}, "$.results[0].memory", "is empty"),
        (
            "mem0",
            {"results": [{"id": "m1", "memory": "x", "created_at": "soon"}]},
            "$.results[0].created_at",
            "not a time",
        ),
        ("mem0", [42], "$[0]", "expected a memory"),
        ("letta", [], "$", "expected an agent file"),
        ("letta", {"agents": [{}, {}]}, "$.agents", "holds 2 agents"),
        (
            "letta",
            {"agents": [{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}]},
            "$.agents[0].messages[0].created_at",
            "expected a time",
        ),
        ("memoryos", {"notes.txt": "x"}, "$", "none of short_term.json"),
        (
            "memoryos",
            {"short_term.json": [{"user_input": "hi"}]},
            "short_term.json:$[0].agent_response",
            "expected text",
        ),
        ("memoryos", {"mid_term.json": {"sessions": []}}, "mid_term.json:$.sessions", "an object of sessions"),
        ("bundle-2", {}, "$", "unknown format"),
    ],
)
def test_a_malformed_export_is_refused_naming_where_and_why(source_format, data, where, why):
    with pytest.raises(BundleInvalid) as refused:
        bundle_from(source_format, data, external_id="alice")

    assert refused.value.path == where and why in refused.value.reason


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(settings, tmp_path):
    settings.MEMORY_IMPORT_MAX_BYTES = 100
    (tmp_path / "big.json").write_text(json.dumps({"results": [{"id": "x" * 200, "memory": "y"}]}))

    with pytest.raises(BundleInvalid, match="the limit is 100"):
        bundle_from_path("mem0", tmp_path / "big.json", external_id="alice")
