"""Concurrent retries of one turn with one Idempotency-Key (real HTTP, real transactions): exactly one page."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory.models import Page
from tests.api.conftest import make_token

BODY = {"user": "alice", "assistant": "ava", "user_message": "Sent five times at once", "assistant_reply": "Once."}


def post(url: str, token: str, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(BODY).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Idempotency-Key": key},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.slow
def test_simultaneous_retries_record_one_page_and_all_get_its_id(live_server, tenant, alice):
    token = make_token(tenant)
    url = f"{live_server.url}/api/v1/turns/"

    with ThreadPoolExecutor(max_workers=5) as pool:
        answers = list(pool.map(lambda _: post(url, token, "same-key"), range(5)))

    assert {status for status, _ in answers} == {201}
    assert len({body["page_id"] for _, body in answers}) == 1
    assert Page.objects.count() == 1
