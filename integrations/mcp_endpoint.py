"""The site's own MCP endpoint, /mcp/: MCP's streamable HTTP served by the same processes as the console and the API.

The site stays a WSGI application (gunicorn's workers, runserver under `make run`): under Django's ASGI handler each
request's synchronous code runs on a thread of its own that ends with it, leaving its persistent database connection
(DATABASE_CONN_MAX_AGE) open behind it. The MCP SDK's transport is an ASGI application, so the view hands each POST to
it (`mcp_server.site_app`: stateless, each answer one JSON body) on an event loop of its own, one thread per process,
started at the first request with the app's lifespan (the SDK's session manager) entered once for the life of the
process. The tools' Django work runs on `mcp_server.django_threads`, as under `mcp_serve --http`; the request's
thread only waits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from integrations.errors import problem_of
from integrations.mcp_server import MCP_PATH, site_app

# Longer than any tool call: a chat waits on the model for at most LLM_TIMEOUT per try.
ANSWER_TIMEOUT = 600.0
STARTUP_TIMEOUT = 30.0


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class AsgiOnItsOwnLoop:
    """An ASGI application answered from synchronous code: on an event loop running on one thread of this process,
    built and started (its lifespan entered) at the first request, then kept for the life of the process."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._started: tuple[asyncio.AbstractEventLoop, Any] | None = None

    def answer(self, scope: dict[str, Any], body: bytes) -> Answer:
        """The app's answer to one HTTP request whose body is `body`; waits for it on the calling thread."""
        loop, app = self._start()
        future = asyncio.run_coroutine_threadsafe(_answer(app, scope, body), loop)
        try:
            return future.result(ANSWER_TIMEOUT)
        except TimeoutError:
            future.cancel()
            raise

    def _start(self) -> tuple[asyncio.AbstractEventLoop, Any]:
        with self._lock:
            if self._started is None:
                app, loop, ready = self._build(), asyncio.new_event_loop(), Future()
                name = "mcp-loop"
                threading.Thread(target=_run_forever, args=(loop, app, ready), name=name, daemon=True).start()
                ready.result(STARTUP_TIMEOUT)
                self._started = loop, app
            return self._started


def _run_forever(loop: asyncio.AbstractEventLoop, app: Any, ready: Future) -> None:
    asyncio.set_event_loop(loop)
    loop.run_until_complete(_within_lifespan(app, ready))


async def _within_lifespan(app: Any, ready: Future) -> None:
    try:
        async with app.router.lifespan_context(app):
            ready.set_result(None)
            await asyncio.Event().wait()  # for the life of the process
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(exc)
        raise


async def _answer(app: Any, scope: dict[str, Any], body: bytes) -> Answer:
    """Run `app` on one request; the client is reported gone only once the whole answer was sent."""
    starts: list[dict[str, Any]] = []
    parts: list[bytes] = []
    request: dict[str, Any] | None = {"type": "http.request", "body": body, "more_body": False}
    sent = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal request
        if request is not None:
            message, request = request, None
            return message
        await sent.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            starts.append(message)
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                sent.set()

    await app(scope, receive, send)
    [start] = starts
    headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in start.get("headers", [])]
    return Answer(status=start["status"], headers=headers, body=b"".join(parts))


site_mcp = AsgiOnItsOwnLoop(site_app)


def _scope(request: HttpRequest) -> dict[str, Any]:
    """The ASGI scope of `request`, at MCP_PATH whether it came to /mcp or /mcp/."""
    host = request.get_host()  # raises DisallowedHost (a 400) unless ALLOWED_HOSTS has it
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": MCP_PATH,
        "raw_path": MCP_PATH.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "server": (host.rsplit(":", 1)[0], int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


@csrf_exempt  # called by agents with a bearer token, never by a browser's session
@require_POST  # stateless: no stream for a GET to open, no session for a DELETE to end (the spec's 405)
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """One MCP message (JSON-RPC over streamable HTTP) answered by the SDK's transport; see the module docstring."""
    try:
        body = request.body
    except RequestDataTooBig as exc:
        problem = problem_of(exc)
        return JsonResponse({"error": {"code": problem.code, "message": problem.message}}, status=problem.status)
    answer = site_mcp.answer(_scope(request), body)
    response = HttpResponse(answer.body, status=answer.status)
    for name, value in answer.headers:
        if name.lower() != "content-length":
            response[name] = value
    return response
