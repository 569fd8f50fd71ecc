"""currency_eval end to end: a tiny chat whose drink changes, replayed and asked about now and before."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from evaluation.currency_eval import Record, currency_evaluate, currency_table


def _turn(dia_id: str, speaker: str, text: str) -> dict:
    return {"dia_id": dia_id, "speaker": speaker, "text": text}


CHAT = [
    {
        "sample_id": "drinks-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "9:00 am on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ann", "I drink a flat white every morning."),
                _turn("D1:2", "Bo", "A good way to start the day."),
            ],
            "session_2_date_time": "9:00 am on 20 June, 2023",
            "session_2": [
                _turn("D2:1", "Ann", "Actually I've given up coffee, I now drink green tea."),
                _turn("D2:2", "Bo", "Green tea is a fine choice."),
            ],
        },
        "qa": [
            {"question": "What do I drink in the morning now?", "answer": "green tea", "evidence": ["D2:1"],
             "category": 4, "validity": "current", "other_value": "flat white"},
            {"question": "What did I drink before?", "answer": "flat white", "evidence": ["D1:1"],
             "category": 3, "validity": "previous", "other_value": "green tea"},
            {"question": "Untagged: who is Bo?", "answer": "the assistant", "evidence": ["D1:2"], "category": 4},
        ],
    }
]  # fmt: skip


@pytest.fixture
def chat_file(tmp_path):
    path = tmp_path / "drinks.json"
    path.write_text(json.dumps(CHAT))
    return path


def test_the_tagged_questions_are_answered_with_the_asked_value_and_the_earlier_turn_is_marked(db, chat_file):
    records = currency_evaluate(data=[chat_file], tenant_slug="cur-test")
    assert [(r.validity, r.right) for r in records] == [("current", True), ("previous", True)]
    current = records[0]
    assert current.other_quoted and current.other_marked


def test_the_table_has_a_row_per_set_and_kind_of_question():
    records = [
        Record("facts", "c1", "q", "current", True, False, other_quoted=True, other_marked=True),
        Record("facts", "c1", "q", "current", False, False),
        Record("facts", "c1", "q", "previous", True, True),
    ]
    table = currency_table(records).splitlines()
    assert table[2] == "| facts | current value | 2 | 0.500 | 0.000 | 1 / 2 | 1 / 1 |"
    assert table[3] == "| facts | previous value | 1 | 1.000 | 1.000 | – | – |"


def test_a_second_run_needs_a_fresh_tenant_and_a_missing_file_is_a_clear_error(db, chat_file, tmp_path):
    call_command("currency_eval", "--data", str(chat_file), "--tenant", "cur-twice")
    with pytest.raises(CommandError, match="already exists"):
        call_command("currency_eval", "--data", str(chat_file), "--tenant", "cur-twice")
    with pytest.raises(CommandError, match="no such file"):
        call_command("currency_eval", "--data", str(tmp_path / "missing.json"))
