"""The MCP SDK's own clients, driven from synchronous tests: a session over stdio (a spawned `manage.py mcp_serve`)
or over streamable HTTP, and a helper that runs one async scenario to its end."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.foundation.processes import REPO


@asynccontextmanager
async def stdio_session(env: dict[str, str], args: list[str] | None = None) -> AsyncIterator[ClientSession]:
    """An initialised session with `manage.py mcp_serve` (or `args`) spawned over stdio by this interpreter."""
    params = StdioServerParameters(command=sys.executable, args=args or ["manage.py", "mcp_serve"], env=env, cwd=REPO)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialised session with the streamable HTTP server at `url`, sending `token` as a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(scenario)


async def call(session: ClientSession, tool: str, **arguments) -> tuple[bool, Any]:
    """(is_error, the tool's JSON answer, or its error text without the SDK's "Error executing tool X: " prefix)."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return True, text.removeprefix(f"Error executing tool {tool}: ")
    return False, result.structured_content if result.structured_content is not None else json.loads(text)


async def read(session: ClientSession, uri: str) -> Any:
    result = await session.read_resource(uri)
    return json.loads(result.contents[0].text)
