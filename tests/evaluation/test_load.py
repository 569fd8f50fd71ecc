"""The load test in small: 10 chat sessions for 60 s against real gunicorn, Celery on Redis and a fake LLM."""

from __future__ import annotations

import pytest

from evaluation.loadtest import LoadReport, _check, load_run, redis_reachable, report_table

BROKER = "redis://127.0.0.1:6379/13"


@pytest.mark.load
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_minute_of_load_answers_no_5xx_and_stores_every_acknowledged_turn_exactly_once(tmp_path):
    if not redis_reachable(BROKER):
        pytest.skip("no Redis answers on 127.0.0.1:6379; start one (redis-server) to run the load test")

    report = load_run(users=10, duration=60, broker_url=BROKER, out=tmp_path)
    print(report_table(report), report.status_counts)

    assert report.server_errors == 0, (report.status_counts, report.problems)
    assert report.problems == []
    assert report.acknowledged_turns > 20 and report.erased_users == 1 and report.exports == 1
    assert report.exports_done == 1  # ten sessions leave the worker no backlog


@pytest.mark.django_db
def test_a_5xx_answer_is_reported_with_what_the_server_said(tenant):
    entries = [
        {"kind": "request", "name": "POST /chat/", "status": 200},
        {"kind": "request", "name": "POST /chat/", "status": 502, "failure": '{"error": "generation_failed"}'},
    ]
    report = LoadReport(users=1, duration_s=1)
    _check(report, tenant, entries)
    assert report.server_errors == 1
    assert report.problems[:2] == ["1 answers were 5xx", 'POST /chat/ answered 502: {"error": "generation_failed"}']
