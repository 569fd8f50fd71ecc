"""`manage.py mcp_serve`: the MCP server over stdio (token from MEMORYOS_API_TOKEN), or streamable HTTP on a port of
its own (the site itself serves streamable HTTP at /mcp/: integrations/mcp_endpoint.py)."""

from __future__ import annotations

import os

import uvicorn
from django.core.management.base import BaseCommand, CommandError

from integrations.mcp_server import MCP_PATH, TOKEN_ENV, build_server, http_app
from memory.services.api_tokens import api_token_authenticate


class Command(BaseCommand):
    help = (
        "Serve MemoryOS to MCP clients: over stdio with the API token in MEMORYOS_API_TOKEN, or with --http on "
        "127.0.0.1:PORT/mcp, where each request sends its own 'Authorization: Bearer' token (the site itself "
        "serves the same at /mcp/)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--http", action="store_true", help="Serve streamable HTTP instead of stdio.")
        parser.add_argument("--host", default="127.0.0.1", help="Address to bind with --http (default 127.0.0.1).")
        parser.add_argument("--port", type=int, default=8001, help="Port with --http (default 8001).")

    def handle(self, *args, http: bool, host: str, port: int, **options) -> None:
        if http:
            self.stderr.write(f"MCP over streamable HTTP on http://{host}:{port}{MCP_PATH}")
            uvicorn.run(http_app(host=host), host=host, port=port, log_level="warning")
            return
        token = os.environ.get(TOKEN_ENV, "")
        if api_token_authenticate(raw=token) is None:
            raise CommandError(f"{TOKEN_ENV} must hold a valid API token (python manage.py api_token_create).")
        # stdout is the protocol's channel: nothing else may be written to it from here on.
        build_server(token=token).run("stdio")
