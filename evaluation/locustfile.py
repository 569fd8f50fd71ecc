"""The load test's traffic (locust): chat sessions of many end users, and one erasure and one export a minute.

Run by `python manage.py load_test` (evaluation.loadtest), which sets LOAD_TOKEN (an API token with every scope)
and LOAD_LOG (a JSON-lines file: one line per request, with the page of every acknowledged turn, for the checks
that follow the run). Not a Django module: it talks to the site over HTTP only.
"""

from __future__ import annotations

import json
import os
import random
import threading
import uuid
from typing import Any

from locust import HttpUser, between, task

API = "/api/v1"
ASSISTANT = "ava"
TIMEOUT = 120  # seconds; a request slower than this is reported as a failure, not waited for
EXPECTED = {200, 201, 202, 409, 410}  # 409/410: the end user is being or has been erased meanwhile
WORDS = ["tea", "garden", "bike", "trip", "sister", "novel", "python", "rain", "coffee", "piano", "hiking", "paris"]

_log_lock = threading.Lock()
_log = open(os.environ.get("LOAD_LOG", os.devnull), "a", buffering=1)  # noqa: SIM115 (open for the whole run)
live_users: set[str] = set()  # end users that have chatted and are not erased: erasure and export pick from them


def record(**entry: Any) -> None:
    """One line of the run's log (greenlets share the file; the lock keeps lines whole)."""
    with _log_lock:
        _log.write(json.dumps(entry) + "\n")


class ApiUser(HttpUser):
    """Speaks to the API with the run's token; every answer is logged and a 5xx or unexpected code fails."""

    abstract = True

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Bearer {os.environ['LOAD_TOKEN']}"

    def call(
        self, method: str, path: str, name: str, body: dict | None = None, key: str = "", gone: int = 410
    ) -> tuple[int, dict]:
        """One request; `gone` is the code that says the end user was erased meanwhile (404 where it is a read)."""
        headers = {"Idempotency-Key": key} if key else {}
        with self.client.request(
            method, API + path, json=body, headers=headers, name=name, timeout=TIMEOUT, catch_response=True
        ) as response:
            code = response.status_code
            try:
                data = response.json() if response.content else {}
            except ValueError:
                data = {}
            if code not in EXPECTED and code != gone:
                response.failure(f"HTTP {code}")
            else:
                response.success()
        failure = response.text[:500] if code >= 500 else ""  # what the server said, for the report's problems
        record(kind="request", name=name, status=code, gone=code == gone and code not in EXPECTED, failure=failure)
        return code, data if isinstance(data, dict) else {}


class ChatSession(ApiUser):
    """One end user chatting: chats with an Idempotency-Key (sometimes sent twice), turns, retrievals, console reads."""

    wait_time = between(1, 3)

    def on_start(self) -> None:
        super().on_start()
        self.new_end_user()

    def new_end_user(self) -> None:
        self.end_user = f"load-{uuid.uuid4().hex[:12]}"
        self.chatted = False  # retrieval of an end user who never spoke answers 404

    def sentence(self) -> str:
        return f"My {random.choice(WORDS)} and my {random.choice(WORDS)} are on my mind today."

    def acknowledged(self, endpoint: str, code: int, data: dict, marker: str, key: str) -> None:
        """Log a 2xx turn's page (the checks look for it), or start a new end user once this one is erased."""
        if code in (200, 201) and data.get("page_id"):
            self.chatted = True
            live_users.add(self.end_user)
            record(kind="ack", endpoint=endpoint, user=self.end_user, page_id=data["page_id"], marker=marker, key=key)
        elif code in (409, 410):
            live_users.discard(self.end_user)
            self.new_end_user()

    @task(6)
    def chat(self) -> None:
        marker, key = uuid.uuid4().hex, uuid.uuid4().hex
        body = {"user": self.end_user, "assistant": ASSISTANT, "message": f"{self.sentence()} ({marker})"}
        code, data = self.call("POST", "/chat/", "POST /chat/", body, key=key)
        self.acknowledged("chat", code, data, marker, key)
        if code == 200 and random.random() < 0.1:
            # a client retrying after a lost answer: the same key must answer the same page, never a second one
            again, replay = self.call("POST", "/chat/", "POST /chat/ (replay)", body, key=key)
            if again == 200 and replay.get("page_id") != data.get("page_id"):
                record(kind="replay_mismatch", key=key, first=data.get("page_id"), second=replay.get("page_id"))

    @task(2)
    def turn(self) -> None:
        marker = uuid.uuid4().hex
        body = {
            "user": self.end_user,
            "assistant": ASSISTANT,
            "user_message": f"{self.sentence()} ({marker})",
            "assistant_reply": "Noted.",
        }
        code, data = self.call("POST", "/turns/", "POST /turns/", body)
        self.acknowledged("turn", code, data, marker, "")

    @task(2)
    def retrieve(self) -> None:
        if not self.chatted:
            return
        body = {"user": self.end_user, "assistant": ASSISTANT, "query": f"what about my {random.choice(WORDS)}?"}
        code, _ = self.call("POST", "/retrieve/", "POST /retrieve/", body, gone=404)
        if code == 404:
            record(kind="gone", user=self.end_user)  # the checks require that this end user was erased
        if code in (404, 409, 410):
            live_users.discard(self.end_user)
            self.new_end_user()

    @task(1)
    def read_pages(self) -> None:
        self.call("GET", f"/pages/?user={self.end_user}", "GET /pages/")

    @task(1)
    def read_segments(self) -> None:
        self.call("GET", "/segments/", "GET /segments/")

    @task(1)
    def read_knowledge(self) -> None:
        self.call("GET", "/knowledge/", "GET /knowledge/")


class Governance(ApiUser):
    """The data protection officer: one export and one erasure of a chatting end user every minute."""

    fixed_count = 1
    done = False

    def wait_time(self) -> float:
        # every 5 s until there are end users to pick from, then once a minute
        return 60 if self.done else 5

    @task
    def export_and_erase(self) -> None:
        if len(live_users) < 2:
            return
        self.done = True
        exported, erased = random.sample(sorted(live_users), 2)
        code, data = self.call("POST", f"/users/{exported}/export/", "POST /users/<id>/export/")
        if code == 202 and data.get("id"):
            record(kind="export", user=exported, job=data["id"])
        live_users.discard(erased)
        body = {"dry_run": False, "legal_basis": "GDPR Art. 17(1)(a)", "reason": "load test"}
        code, _ = self.call("POST", f"/users/{erased}/erasure/", "POST /users/<id>/erasure/", body)
        record(kind="erasure", user=erased, status=code)
