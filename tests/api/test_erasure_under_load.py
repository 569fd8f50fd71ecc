"""An erasure while the user is chatting (real HTTP, real transactions): it wins, and every chat ends cleanly."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from memory.models import EndUser, ErasureReceipt
from memory.services.gdpr_export import export_build
from tests.api.conftest import make_token
from tests.memory.test_gdpr import MARKER, marker_hits

USER = f"user-{MARKER}"
CHATS = 20


def call(url: str, token: str, body: dict, key: str | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def build(job_id: int) -> None:
    try:
        export_build(job_id=job_id)
    finally:
        connection.close()  # this thread's own connection, or the test database cannot be dropped


@pytest.fixture
def export_dir(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return settings.EXPORT_DIR


@pytest.mark.slow
def test_an_erasure_during_twenty_parallel_chats_wins_and_leaves_no_trace(live_server, tenant, export_dir):
    token = make_token(tenant)
    api = f"{live_server.url}/api/v1"
    first = call(f"{api}/chat/", token, {"user": USER, "assistant": "ava", "message": f"My {MARKER} is blue."})
    assert first[0] == 200, first
    job_id = call(f"{api}/users/{USER}/export/", token, {})[1]["id"]
    chatted = threading.Event()

    def chat(n: int) -> tuple[int, dict]:
        body = {"user": USER, "assistant": "ava", "message": f"{MARKER} fact {n}"}
        answer = call(f"{api}/chat/", token, body, key=f"chat-{n}" if n % 2 else None)  # half with a key
        chatted.set()
        return answer

    def erase() -> tuple[int, dict]:
        chatted.wait(30)
        time.sleep(0.05)
        body = {"dry_run": False, "legal_basis": "GDPR Art. 17(1)(a)", "reason": "asked to be forgotten"}
        return call(f"{api}/users/{USER}/erasure/", token, body)

    with ThreadPoolExecutor(max_workers=CHATS + 2) as pool:
        chats = [pool.submit(chat, n) for n in range(CHATS)]
        erasure = pool.submit(erase)
        pool.submit(build, job_id)  # the export's worker, running alongside
        answers = [c.result() for c in chats]
        erased = erasure.result()

    assert erased[0] == 200 and erased[1]["receipt"]["receipt_hash"], erased
    codes = [code for code, _ in answers]
    print("chat answers:", sorted(codes))
    assert set(codes) <= {200, 409, 410}, answers
    assert all(body["reply"] for code, body in answers if code == 200)
    assert all(body["error"]["code"] in ("deactivated", "erased") for code, body in answers if code != 200)
    assert not EndUser.objects.filter(external_id=USER).exists() and ErasureReceipt.objects.count() == 1
    assert marker_hits() == []
    assert [p for p in export_dir.rglob("*") if p.is_file()] == []


def test_a_chat_after_the_erasure_is_gone_and_does_not_bring_the_user_back(api, tenant):
    assert api.post("/api/v1/chat/", {"user": USER, "assistant": "ava", "message": "hi"}, format="json").status_code
    body = {"dry_run": False, "legal_basis": "GDPR Art. 17", "reason": "asked to be forgotten"}
    assert api.post(f"/api/v1/users/{USER}/erasure/", body, format="json").status_code == 200

    chat = api.post("/api/v1/chat/", {"user": USER, "assistant": "ava", "message": f"{MARKER} again"}, format="json")
    turn = {"user": USER, "assistant": "ava", "user_message": "a", "assistant_reply": "b"}
    recorded = api.post("/api/v1/turns/", turn, format="json")

    assert chat.status_code == 410 and chat.json()["error"]["code"] == "erased"
    assert recorded.status_code == 410 and not EndUser.objects.filter(external_id=USER).exists()


def test_a_deactivated_user_cannot_chat_but_can_still_be_exported(api, tenant):
    api.post("/api/v1/chat/", {"user": "zoe", "assistant": "ava", "message": "hi"}, format="json")
    api.post("/api/v1/users/zoe/deactivate/", {"reason": "closed account"}, format="json")

    chat = api.post("/api/v1/chat/", {"user": "zoe", "assistant": "ava", "message": "hello"}, format="json")

    assert chat.status_code == 409 and chat.json()["error"]["code"] == "deactivated"
    assert api.post("/api/v1/users/zoe/export/").status_code == 202


def test_a_retrieval_whose_user_is_erased_meanwhile_is_gone_not_a_server_error(transactional_db, api, monkeypatch):
    from memory.services import recall  # the audited retrieval the view calls
    from memory.services.audit import Actor
    from memory.services.gdpr import user_erase

    api.post("/api/v1/chat/", {"user": USER, "assistant": "ava", "message": "hi"}, format="json")
    retrieve = recall.retrieve

    def erase_meanwhile(**kwargs):
        end_user = EndUser.objects.get(external_id=USER)
        user_erase(end_user=end_user, actor=Actor.system("test"), legal_basis="GDPR Art. 17", dry_run=False)
        return retrieve(**kwargs)

    monkeypatch.setattr(recall, "retrieve", erase_meanwhile)

    response = api.post("/api/v1/retrieve/", {"user": USER, "assistant": "ava", "query": "hi"}, format="json")

    assert response.status_code == 410 and response.json()["error"]["code"] == "erased"
