"""locomo_eval end to end: a tiny LoCoMo file through the real pipeline, and (slow) a real dev-split conversation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.bench.fakes import BenchLLM
from evaluation.locomo_eval import EvaluationError, QuestionMemo, system_config
from memory.llm import use_llm
from memory.models import Page, Segment, Tenant
from memory.retrieval.config import DEFAULT, PAPER

LOCOMO_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


def _turn(dia_id: str, speaker: str, text: str, **extra) -> dict:
    return {"dia_id": dia_id, "speaker": speaker, "text": text, **extra}


TINY = [
    {
        "sample_id": "conv-t1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ann", "I adopted a puppy named Rex last weekend."),
                _turn("D1:2", "Bo", "Congratulations! What breed is Rex?"),
                _turn("D1:3", "Ann", "Rex is a golden retriever.", blip_caption="a photo of a golden puppy on grass"),
                _turn("D1:4", "Bo", "Golden retrievers are lovely dogs."),
                _turn("D1:5", "Ann", "I also started learning the violin at a music school."),
                _turn("D1:6", "Bo", "The violin is hard; how are the lessons going?"),
                _turn("D1:7", "Ann", "Slowly, my teacher Mrs Park is patient."),
                _turn("D1:8", "Bo", "A patient teacher helps a lot."),
            ],
            "session_2_date_time": "9:00 am on 20 June, 2023",
            "session_2": [
                _turn("D2:1", "Bo", "How was your trip to Lisbon?"),
                _turn("D2:2", "Ann", "Lisbon was sunny and we ate pastel de nata every day."),
                _turn("D2:3", "Bo", "Did you visit the tram museum?"),
                _turn("D2:4", "Ann", "Yes, we stayed in Lisbon for 5 days in total."),
                _turn("D2:5", "Bo", "Five days in Lisbon sounds perfect."),
                _turn("D2:6", "Ann", "Rex stayed with my sister while we were away."),
                _turn("D2:7", "Bo", "Your sister is kind."),
                _turn("D2:8", "Ann", "I will send you photos of the tram museum."),
            ],
        },
        "qa": [
            {"question": "What breed is Rex?", "answer": "golden retriever", "evidence": ["D1:3"], "category": 4},
            {"question": "How many days did Ann stay in Lisbon?", "answer": 5, "evidence": ["D2:4"], "category": 2},
            {
                "question": "Who looked after Rex, and which city did Ann visit?",
                "answer": "her sister, Lisbon",
                "evidence": ["D2:6; D2:2"],
                "category": 1,
            },
            {
                "question": "Which instrument does Bo play?",
                "adversarial_answer": "violin",
                "evidence": ["D1:5"],
                "category": 5,
            },
        ],
    }
]


@pytest.fixture
def tiny_file(tmp_path) -> Path:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(TINY))
    return path


def run_eval(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "results.json"
    call_command("locomo_eval", *args, "--out", str(out), "--report", str(tmp_path / "report.html"), "--no-progress")
    return json.loads(out.read_text())


@pytest.mark.django_db(transaction=True)
def test_a_tiny_conversation_is_ingested_and_every_system_is_scored(tiny_file, tmp_path, settings):
    settings.MEMORY_STM_CAPACITY = 3  # nine pages: six of them reach mid-term memory

    results = run_eval(tmp_path, "--data", str(tiny_file), "--answer", "--k", "5", "--tenant", "locomo-tiny")

    assert results["turns"] == 16
    assert results["pages_with_dia_ids"] == 16  # no turn dropped, a session opening with speaker_b included
    assert results["pages"] == 9 == Page.objects.filter(space__tenant__slug="locomo-tiny").count()
    assert results["segments"] == Segment.objects.filter(space__tenant__slug="locomo-tiny").count() >= 1
    assert results["pending_pages"] == 0
    assert results["seconds"] > 0
    assert set(results["systems"]) == {"memoryos", "flat_rag", "full_context"}
    for system in ("memoryos", "flat_rag"):
        recall = results["systems"][system]["recall_at_k"]
        assert set(recall) == {"1", "2", "3", "4", "5", "overall"}
        assert all(value is None or 0.0 <= value <= 1.0 for value in recall.values())
        assert recall["3"] is None  # no open-domain question
        assert results["systems"][system]["recall_curve"]["overall"][-1] == 1.0  # 20 ≥ 9 pages: all of them
    assert results["systems"]["full_context"]["recall_at_k"]["overall"] == 1.0
    assert results["systems"]["flat_rag"]["llm_calls_per_answer"] == 0.0


@pytest.mark.django_db(transaction=True)
def test_each_question_keeps_its_retrieved_pages_and_scores(tiny_file, tmp_path, settings):
    settings.MEMORY_STM_CAPACITY = 3

    records = run_eval(tmp_path, "--data", str(tiny_file), "--answer", "--tenant", "locomo-tiny")["records"]

    assert [r["id"] for r in records] == ["conv-t1:q0", "conv-t1:q1", "conv-t1:q2", "conv-t1:q3"]
    assert records[1]["answer"] == "5"  # an int answer, as text
    assert records[2]["evidence"] == ["D2:6", "D2:2"]  # a malformed evidence entry, recovered
    stored = {d for meta in Page.objects.values_list("source_meta", flat=True) for d in meta["dia_ids"]}
    for record in records:
        memoryos = record["systems"]["memoryos"]
        assert memoryos["retrieved"], record["question"]
        assert {d for page in memoryos["retrieved"] for d in page["dia_ids"]} <= stored
        assert {page["tier"] for page in memoryos["retrieved"]} <= {"stm", "mtm"}
        assert 0.0 <= memoryos["f1"] <= 1.0 if record["category"] != 5 else memoryos["f1"] is None
        assert memoryos["prediction"]
    assert "Evidence recall@10" in (tmp_path / "report.html").read_text()


@pytest.mark.django_db(transaction=True)
def test_a_run_scores_only_the_systems_asked_for_and_a_second_run_needs_a_fresh_tenant(tiny_file, tmp_path):
    results = run_eval(tmp_path, "--data", str(tiny_file), "--systems", "flat_rag", "--tenant", "locomo-tiny")
    assert set(results["systems"]) == {"flat_rag"}
    assert "f1" not in results["systems"]["flat_rag"]  # no --answer, no answers
    with pytest.raises(CommandError, match="already exists"):
        run_eval(tmp_path, "--data", str(tiny_file), "--tenant", "locomo-tiny")
    assert Tenant.objects.filter(slug="locomo-tiny").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_kept_tenant_is_scored_again_without_ingesting_with_the_variants_asked_for(tiny_file, tmp_path):
    run_eval(tmp_path, "--data", str(tiny_file), "--systems", "flat_rag", "--tenant", "locomo-tiny")
    pages = Page.objects.filter(space__tenant__slug="locomo-tiny").count()
    systems = "memoryos,memoryos_paper,memoryos:lexical=off:segment_prior=0.2,flat_rag"

    results = run_eval(tmp_path, "--data", str(tiny_file), "--systems", systems, "--tenant", "locomo-tiny", "--reuse")

    assert results["reused_tenant"] and Page.objects.filter(space__tenant__slug="locomo-tiny").count() == pages
    assert list(results["systems"]) == systems.split(",")
    for system in systems.split(","):
        assert set(results["systems"][system]["by_conversation"]) == {"conv-t1"}
    with pytest.raises(CommandError, match="no tenant"):
        run_eval(tmp_path, "--data", str(tiny_file), "--tenant", "locomo-none", "--reuse")


def test_a_variant_changes_only_the_stages_it_names():
    assert system_config("memoryos") == DEFAULT and system_config("memoryos_paper") == PAPER
    assert system_config("flat_rag") is None
    variant = system_config("memoryos:lexical=off:segment_prior=0.2")
    assert variant == dataclasses.replace(DEFAULT, lexical=False, segment_prior=0.2)
    with pytest.raises(EvaluationError, match="unknown stage"):
        system_config("memoryos:colour=blue")


@pytest.mark.django_db
def test_unknown_conversations_and_systems_are_refused(tiny_file, tmp_path):
    with pytest.raises(CommandError, match="conv-99"):
        run_eval(tmp_path, "--data", str(tiny_file), "--conversations", "conv-99")
    with pytest.raises(CommandError, match="unknown systems"):
        run_eval(tmp_path, "--data", str(tiny_file), "--systems", "memoryos,bm25")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason=f"LoCoMo dev split not found at {LOCOMO_DEV}")
def test_a_dev_split_conversation_runs_end_to_end(tmp_path):
    results = run_eval(tmp_path, "--data", str(LOCOMO_DEV), "--conversations", "conv-26", "--tenant", "locomo-conv26")

    assert results["turns"] == results["pages_with_dia_ids"] == 419
    assert results["questions"] == 199
    assert 0.0 < results["systems"]["memoryos"]["recall_at_k"]["overall"] <= 1.0
    assert 0.0 < results["systems"]["flat_rag"]["recall_at_k"]["overall"] <= 1.0
    assert len(results["systems"]["memoryos"]["recall_curve"]["overall"]) == 20


@pytest.mark.django_db(transaction=True)
def test_dia_ids_of_two_conversations_are_counted_apart(tmp_path):
    second = json.loads(json.dumps(TINY[0]))
    second["sample_id"] = "conv-t2"
    path = tmp_path / "two.json"
    path.write_text(json.dumps([TINY[0], second]))

    results = run_eval(tmp_path, "--data", str(path), "--systems", "flat_rag", "--tenant", "locomo-two")

    assert results["turns"] == results["pages_with_dia_ids"] == 32  # "D1:1" of each conversation counts
    assert results["conversations"] == ["conv-t1", "conv-t2"]
    assert {r["id"].split(":")[0] for r in results["records"]} == {"conv-t1", "conv-t2"}


@pytest.mark.django_db(transaction=True)
def test_llm_mode_updates_memory_and_answers_through_the_llm_seam(tiny_file, tmp_path, settings):
    settings.MEMORY_STM_CAPACITY = 3
    settings.LLM_BASE_URL = "http://llm.invalid/v1"  # never contacted: the seam holds the fake
    llm = BenchLLM()  # valid JSON for the memory steps; '{"answer": "ok"}' for anything else

    with use_llm(llm):
        results = run_eval(tmp_path, "--data", str(tiny_file), "--llm", "openai", "--answer", "--tenant", "locomo-llm")

    assert results["memory_llm_calls"] >= 6  # one chain-and-topic call per page that left STM
    for system in ("memoryos", "flat_rag", "full_context"):
        summary = results["systems"][system]
        assert summary["llm_calls_per_answer"] == 1.0
        assert summary["prompt_tokens_per_answer"] > 0
        assert summary["answer_errors"] == 0
    assert llm.calls_by_step["other"] == 3 * 4  # one answer per question per system
    assert results["records"][0]["systems"]["memoryos"]["prediction"] == '{"answer": "ok"}'


@pytest.mark.django_db
def test_llm_mode_needs_an_llm_endpoint(tiny_file, tmp_path, settings):
    settings.LLM_BASE_URL = ""
    with pytest.raises(CommandError, match="LLM_BASE_URL"):
        run_eval(tmp_path, "--data", str(tiny_file), "--llm", "openai")


def test_a_question_is_embedded_once_for_both_systems(embedder):
    memo = QuestionMemo(embedder)
    first = memo.embed(["What breed is Rex?"])
    again = memo.embed(["What breed is Rex?"])  # what retrieve() asks for right after
    assert embedder.calls == 1
    assert (first == again).all() and again.shape == (1, embedder.dimension)
    memo.embed(["Another question?"])
    assert embedder.calls == 2
    assert (memo.name, memo.dimension) == (embedder.name, embedder.dimension)  # the store's guard accepts it


@pytest.mark.django_db(transaction=True)
def test_several_sets_are_scored_into_their_own_tenants_and_shown_in_one_table(tiny_file, tmp_path, capsys):
    second = tmp_path / "second_set.json"
    second.write_text(json.dumps([{**TINY[0], "sample_id": "conv-t2"}]))
    out = tmp_path / "results.json"

    call_command(
        "locomo_eval",
        "--data",
        str(tiny_file),
        "--data",
        str(second),
        "--systems",
        "memoryos,flat_rag",
        "--tenant",
        "sets",
        "--out",
        str(out),
        "--report",
        str(tmp_path / "report.html"),
        "--no-progress",
    )

    assert set(Tenant.objects.filter(slug__startswith="sets-").values_list("slug", flat=True)) == {
        "sets-tiny-locomo",
        "sets-second-set",
    }
    assert json.loads((tmp_path / "results-second_set.json").read_text())["conversations"] == ["conv-t2"]
    table = capsys.readouterr().out.split("| set | system |")[1]
    assert "| tiny_locomo | memoryos |" in table and "| second_set | flat_rag |" in table
