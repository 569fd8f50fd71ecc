"""A real HTTP receiver for webhook tests: `http.server` on 127.0.0.1 in a thread, answering the status codes it is
told to (then 200), and keeping every request it got."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from memory.webhooks import signature_verify


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def payload(self) -> dict:
        return json.loads(self.body)

    def signed_with(self, secret: str) -> bool:
        """Whether the request verifies with `secret`, as a receiver checks it (Standard Webhooks)."""
        return signature_verify(
            secret=secret,
            event_id=self.headers["webhook-id"],
            timestamp=int(self.headers["webhook-timestamp"]),
            body=self.body,
            header=self.headers["webhook-signature"],
        )


class Receiver:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.statuses: list[int] = []  # answered in order, then 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {key.lower(): value for key, value in self.headers.items()}
                receiver.requests.append(Received(self.path, headers, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/memory"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
