"""The generated evaluation sets: deterministic, LoCoMo-shaped, every question answerable from its evidence."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.core.management import call_command

from evaluation import devsets, locomo, scoring
from evaluation.sets_table import sets_table


def _utterances(sample: dict) -> dict[str, str]:
    conversation = sample["conversation"]
    return {
        turn["dia_id"]: turn["text"]
        for key, turns in conversation.items()
        if locomo.SESSION_KEY.match(key) and isinstance(turns, list)
        for turn in turns
    }


@pytest.mark.parametrize("generate", [devsets.assistant_facts, devsets.technical_long])
def test_a_set_is_the_same_for_the_same_seed_and_differs_for_another(generate):
    assert json.dumps(generate(seed=3)) == json.dumps(generate(seed=3))
    assert json.dumps(generate(seed=3)) != json.dumps(generate(seed=4))


@pytest.mark.parametrize("generate", [devsets.assistant_facts, devsets.technical_long])
def test_every_question_names_evidence_that_holds_its_answer(generate):
    for sample in generate(seed=1):
        said = _utterances(sample)
        locomo.conversation_turns(sample["conversation"])  # reads as LoCoMo does (dates parse)
        for qa in sample["qa"]:
            evidence = scoring.evidence_ids(qa["evidence"])
            assert evidence and all(dia_id in said for dia_id in evidence), qa
            if qa["category"] in (scoring.SINGLE_HOP, scoring.OPEN_DOMAIN):
                assert qa["answer"] in said[evidence[0]], qa


def test_personal_facts_change_and_the_previous_value_is_asked_for():
    questions = [qa for sample in devsets.assistant_facts(seed=1) for qa in sample["qa"]]
    categories = Counter(qa["category"] for qa in questions)
    assert set(categories) == {1, 2, 3, 4}
    previous = [qa for qa in questions if qa["category"] == scoring.OPEN_DOMAIN]
    assert previous and all(len(qa["evidence"]) == 1 for qa in previous)


def test_technical_answers_are_long_and_their_details_sit_anywhere_in_them():
    samples = devsets.technical_long(seed=1)
    replies = [text for s in samples for d, text in _utterances(s).items() if int(d.split(":")[1]) % 2 == 0]
    assert max(len(r) for r in replies) > 8_000
    positions = []
    for sample in samples:
        said = _utterances(sample)
        for qa in sample["qa"]:
            if qa["category"] == scoring.SINGLE_HOP and len(said[qa["evidence"][0]]) > 4_000:
                positions.append(said[qa["evidence"][0]].index(qa["answer"]) / len(said[qa["evidence"][0]]))
    assert min(positions) < 0.2 and max(positions) > 0.8  # early in some answers, at the end of others


def test_filler_goes_between_exchanges_and_leaves_the_real_pages_as_they_were():
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": f"D1:{n}", "text": f"t{n}"}
                if n % 2
                else {"speaker": "Bo", "dia_id": f"D1:{n}", "text": f"t{n}"}
                for n in range(1, 41)
            ],
        },
        "qa": [{"question": "q", "answer": "a", "evidence": ["D1:3"], "category": 4}],
    }
    (padded,) = devsets.locomo_filler([sample], seed=1, share=0.5)
    real = locomo.conversation_turns(sample["conversation"])
    kept = [t for t in locomo.conversation_turns(padded["conversation"]) if t.dia_ids[0].startswith("D")]
    assert [t.dia_ids for t in kept] == [t.dia_ids for t in real]
    assert len(locomo.conversation_turns(padded["conversation"])) > len(real)
    assert padded["qa"] == sample["qa"] and padded["sample_id"] == "conv-x-filler"


def test_the_command_writes_each_set(tmp_path):
    call_command("devsets_generate", "--out", str(tmp_path), "--locomo", str(tmp_path / "absent.json"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["assistant_facts.json", "technical_long.json"]
    assert locomo.load(tmp_path / "assistant_facts.json")[0]["qa"]


def test_the_sets_table_puts_each_set_and_system_on_a_row():
    curve = {"1": [0.5] * 20, "2": [None] * 20, "3": [0.25] * 20, "4": [1.0] * 20, "overall": [0.75] * 20}
    outcomes = {"facts": {"systems": {"memoryos": {"recall_curve": curve}, "full_context": {}}}}
    table = sets_table(outcomes).splitlines()
    assert len(table) == 3
    assert table[2] == "| facts | memoryos | 0.500 / 0.500 | – | 0.250 / 0.250 | 1.000 / 1.000 | 0.750 / 0.750 |"
