"""The MCP server: memory as tools and resources for any MCP client, over stdio or streamable HTTP.

The site serves streamable HTTP itself at /mcp/ (`site_app`, answered by `integrations/mcp_endpoint.py`);
`manage.py mcp_serve` serves stdio, or with --http the same tools on a port of their own (`http_app`).

Built with the official SDK's `MCPServer`. Every tool and resource authenticates its caller with an API token (the
same hashed tokens and scopes as the REST API): over stdio the one token the server was started with (the
MEMORYOS_API_TOKEN environment variable), over HTTP the `Authorization: Bearer` header of each request. It is
checked again on every call, so a revoked token stops working at once. The work itself is `integrations.tools`:
the REST API's services and selectors, audited with the token as actor.

Tools are coroutines that hand their Django work to a few threads of this server's own (`DjangoThreads`), each with
its own database connection, closed there when too old or broken before and after each call, as Django does around
a request. The SDK would run a synchronous tool on one of anyio's worker threads (up to 40), which end after 10 s
idle and leave their connection open until the garbage collector frees it.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.db import close_old_connections, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import Response

from api.access import Principal
from integrations import tools
from integrations.access import NotAuthenticated, bearer_token, principal_for_token
from integrations.errors import Problem, problem_of
from memory.retrieval.side_readers import stopped_threads_connections_close
from memory.services.api_tokens import api_token_authenticate

TOKEN_ENV = "MEMORYOS_API_TOKEN"
SERVER_NAME = "memoryos"
INSTRUCTIONS = (
    "Long-term memory of the people you talk to. Call memory_retrieve with the user's message before answering and "
    "memory_record_turn after (or memory_chat to let MemoryOS answer). Users are named by their external id; "
    "name the assistant when the tenant has several."
)
T = TypeVar("T")
ItemKind = Literal["page", "segment", "knowledge", "profile_version"]
# Tool calls running at once per server (each holds a database connection while it runs, and keeps it for the next):
# a chat waits on the model for seconds, a read takes milliseconds.
DJANGO_THREADS = 8


class DjangoThreads:
    """A fixed pool of DJANGO_THREADS threads that run the tools' Django work, each on its own database connection,
    kept for its next call no longer than DATABASE_CONN_MAX_AGE (checked before and after each call). Never more
    connections than threads, whatever the number of calls; started on the first call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._opened: set[BaseDatabaseWrapper] = set()

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` on one of the threads; the caller's event loop goes on meanwhile."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(DJANGO_THREADS, thread_name_prefix="mcp-django")
            executor = self._executor
        # the call's context variables go along, as anyio's threads take them (the SDK's request context)
        context = contextvars.copy_context()
        return await asyncio.wrap_future(executor.submit(context.run, self._within_connection, work))

    def _within_connection(self, work: Callable[[], T]) -> T:
        close_old_connections()
        try:
            return work()
        finally:
            close_old_connections()
            with self._lock:
                self._opened |= set(connections.all(initialized_only=True))

    def close(self) -> None:
        """Stop the threads and close their connections (a test's database is dropped only once none is open)."""
        with self._lock:
            executor, opened = self._executor, self._opened
            self._executor, self._opened = None, set()
        if executor is not None:
            executor.shutdown(wait=True)
        stopped_threads_connections_close(opened)


django_threads = DjangoThreads()


class Caller:
    """How a server finds who calls: a fixed token (stdio), or each HTTP request's bearer token."""

    def __init__(self, token: str | None) -> None:
        self.token = token

    def principal(self, ctx: Context | None, scope: str) -> Principal:
        if self.token is not None:
            return principal_for_token(self.token, scope=scope)
        headers = ctx.headers if ctx is not None else None
        if headers is None:
            raise NotAuthenticated("No API token: set MEMORYOS_API_TOKEN or send 'Authorization: Bearer <token>'.")
        return principal_for_token(bearer_token(headers.get("authorization")), scope=scope)


def _request_id(ctx: Context | None) -> str:
    return f"mcp-{ctx.request_id}" if ctx is not None else "mcp"


async def _run(caller: Caller, ctx: Context | None, scope: str, work: Callable[[Principal], T], error=ToolError) -> T:
    """`work(principal)` for an authenticated caller holding `scope`, on one of the server's Django threads;
    expected failures become `error(message)`."""
    return await django_threads.run(lambda: _authorised(caller, ctx, scope, work, error))


def _authorised(caller: Caller, ctx: Context | None, scope: str, work: Callable[[Principal], T], error) -> T:
    try:
        return work(caller.principal(ctx, scope))
    except Exception as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        raise error(_error_text(problem)) from None


def _error_text(problem: Problem) -> str:
    """The problem's message; when rate-limited, with how long to wait (an MCP error has no Retry-After header)."""
    if problem.retry_after is None:
        return problem.message
    return f"{problem.message} Try again in {problem.retry_after} s."


def build_server(*, token: str | None) -> MCPServer:
    """The MCP server with MemoryOS's tools and resources; `token` for stdio, None to read each request's header."""
    caller = Caller(token)
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)
    _add_tools(server, caller)
    _add_resources(server, caller)
    return server


def _add_tools(server: MCPServer, caller: Caller) -> None:
    @server.tool()
    async def memory_retrieve(
        user: str, query: str, ctx: Context, assistant: str | None = None, record_visits: bool = True
    ) -> dict[str, Any]:
        """What memory holds for a query about `user`: latest turns, relevant earlier pages (ids, dates, scores),
        the profile and facts. The same result as POST /api/v1/retrieve/. Needs the read scope."""
        return await _run(
            caller,
            ctx,
            "read",
            lambda p: tools.memory_retrieve_tool(
                p, user=user, query=query, assistant=assistant, record_visits=record_visits, request_id=_request_id(ctx)
            ),
        )

    @server.tool()
    async def memory_record_turn(
        user: str,
        user_message: str,
        assistant_reply: str,
        ctx: Context,
        assistant: str | None = None,
        at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Store one turn that your agent generated (the user's message and your reply) in `user`'s memory.
        The user is created on first use. With idempotency_key, a retry stores nothing twice. Needs write."""
        return await _run(
            caller,
            ctx,
            "write",
            lambda p: tools.memory_record_turn_tool(
                p,
                user=user,
                user_message=user_message,
                assistant_reply=assistant_reply,
                assistant=assistant,
                at=at,
                idempotency_key=idempotency_key,
            ),
        )

    @server.tool()
    async def memory_chat(user: str, message: str, ctx: Context, assistant: str | None = None) -> dict[str, Any]:
        """Send `message` as `user`; MemoryOS's assistant answers from memory and the turn is stored.
        Needs the write scope."""
        return await _run(
            caller, ctx, "write", lambda p: tools.memory_chat_tool(p, user=user, message=message, assistant=assistant)
        )

    @server.tool()
    async def profile_get(user: str, ctx: Context) -> dict[str, Any]:
        """The current profile of `user` (a short description built from their conversations). Needs read."""
        return await _run(
            caller, ctx, "read", lambda p: tools.profile_get_tool(p, user=user, request_id=_request_id(ctx))
        )

    @server.tool()
    async def memory_search(
        user: str, query: str, ctx: Context, assistant: str | None = None, limit: int = 10
    ) -> dict[str, Any]:
        """Full-text search over one user's pages (turns) and facts, best match first. Needs the read scope."""
        return await _run(
            caller,
            ctx,
            "read",
            lambda p: tools.memory_search_tool(
                p, user=user, query=query, assistant=assistant, limit=limit, request_id=_request_id(ctx)
            ),
        )

    @server.tool()
    async def memory_forget(
        kind: ItemKind, id: int, reason: str, ctx: Context, dry_run: bool = False
    ) -> dict[str, Any]:
        """Forget one memory item (a page, segment, knowledge entry or profile version) and what was derived from
        it; `reason` is required and audited. With dry_run, only say what would be forgotten. Needs write."""
        return await _run(
            caller,
            ctx,
            "write",
            lambda p: tools.memory_forget_tool(
                p, kind=kind, id=id, reason=reason, dry_run=dry_run, request_id=_request_id(ctx)
            ),
        )


def _add_resources(server: MCPServer, caller: Caller) -> None:
    @server.resource("memoryos://users/{user}/profile", mime_type="application/json")
    async def profile(user: str, ctx: Context) -> str:
        """The user's current profile."""
        work = lambda p: tools.profile_get_tool(p, user=user, request_id=_request_id(ctx))  # noqa: E731
        return json.dumps(await _run(caller, ctx, "read", work, error=ResourceError))

    @server.resource("memoryos://users/{user}/knowledge", mime_type="application/json")
    async def knowledge(user: str, ctx: Context) -> str:
        """Every fact remembered about the user, newest first."""
        work = lambda p: tools.knowledge_read(p, user=user, request_id=_request_id(ctx))  # noqa: E731
        return json.dumps(await _run(caller, ctx, "read", work, error=ResourceError))


# --- Streamable HTTP ----------------------------------------------------------------------------------------------

MCP_PATH = "/mcp"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


class BearerRequired:
    """ASGI middleware: an HTTP request without a valid API token is answered 401 before the MCP transport sees it.

    Tools check the token (and their scope) again on every call; this only turns strangers away at the door, with
    the `WWW-Authenticate: Bearer` challenge HTTP clients expect.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not await django_threads.run(lambda: self._valid(Headers(scope=scope))):
            body = json.dumps({"error": {"code": "invalid_api_key", "message": "A valid API token is required."}})
            response = Response(body, status_code=401, media_type="application/json")
            response.headers["WWW-Authenticate"] = 'Bearer realm="memoryos"'
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _valid(headers: Headers) -> bool:
        try:
            return api_token_authenticate(raw=bearer_token(headers.get("authorization"))) is not None
        except NotAuthenticated:
            return False


def http_app(*, host: str = "127.0.0.1"):
    """The ASGI app serving MCP's streamable HTTP transport at /mcp, each request authenticated by its bearer token.

    Host headers are checked against DNS rebinding: localhost names when bound to a loopback address, else
    Django's ALLOWED_HOSTS.
    """
    security = None
    if "*" in settings.ALLOWED_HOSTS:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    elif host not in LOCAL_HOSTS:
        hosts = [*settings.ALLOWED_HOSTS, *(f"{name}:*" for name in settings.ALLOWED_HOSTS)]
        security = TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=[])
    app = build_server(token=None).streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, host=host
    )
    app.add_middleware(BearerRequired)
    return app


def site_app():
    """The ASGI app behind the site's own /mcp/ (integrations/mcp_endpoint.py): stateless, each answer one JSON body.

    Stateless because the site runs in several processes (gunicorn's workers, several machines) that share no
    memory: a session kept in one would be unknown to the next request's. Our tools never call back to the client,
    so a session holds nothing they need. The SDK's Host check is off: Django has already checked the Host header
    against ALLOWED_HOSTS (its `.example.com` patterns included, which the SDK does not read), and the bearer token
    that every request needs is what a page from another site cannot send.
    """
    app = build_server(token=None).streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app.add_middleware(BearerRequired)
    return app
