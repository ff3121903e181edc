#!/usr/bin/env python3
"""Backend for the gateway's round-3 hostile tests (runs under .venv-mcp1 OR .venv-mcp2).

Usage: resource_rules_server.py --port P --name NAME [--gzip] [--json] [--greedy-template]

Under mcp 1.30.0: FastMCP in its default stateful mode; under mcp 2.3.0: MCPServer with sessions
(a 2026-07-28 request is served statelessly). Both at http://127.0.0.1:P/mcp, with:
- resources `admin://secret` and `public://info`, and the template `admin://users/{uid}`
  (`resources/read` returns "secret", "info", "user <uid>");
- tools `whoami` (NAME) and `admin_reset` ("NAME:reset").
--gzip wraps the app in Starlette's GZipMiddleware (minimum_size=0: every answer it may compress,
i.e. every JSON answer, is gzip when the client accepts it); --json answers POSTs with JSON
instead of SSE (the SDKs' `json_response=True`). --greedy-template (FastMCP 1.30.0 only: mcp 2.3.0
refuses adjacent expressions) also serves the template `run://{a}{b}{c}{d}{e}!` ("run A B C D E"),
five expressions in a row before a literal: a matcher that tries every split of a URI is slow on it.
Prints "READY <port>" (flushed).
"""

from __future__ import annotations

import sys
from importlib.metadata import version as dist_version

import peer_serve
from peer_serve import HOST

V2 = int(dist_version("mcp").split(".")[0]) >= 2
GZIP = "--gzip" in sys.argv
if GZIP:
    sys.argv.remove("--gzip")
JSON = "--json" in sys.argv
if JSON:
    sys.argv.remove("--json")
GREEDY = "--greedy-template" in sys.argv
if GREEDY:
    sys.argv.remove("--greedy-template")
    if V2:
        raise SystemExit("--greedy-template needs mcp 1.30.0 (2.3.0 refuses adjacent expressions)")


def build_app(name: str):
    if V2:
        from mcp.server.mcpserver import MCPServer

        mcp = MCPServer(name, log_level="WARNING")
    else:
        from mcp.server.fastmcp import FastMCP

        mcp = FastMCP(name, host=HOST, log_level="WARNING", json_response=JSON)

    @mcp.tool()
    def whoami() -> str:
        """Return this backend's name."""
        return name

    @mcp.tool()
    def admin_reset() -> str:
        """A tool the tests' rules reserve for the `admin` scope."""
        return f"{name}:reset"

    @mcp.resource("admin://secret")
    def secret() -> str:
        """Only for admins."""
        return "secret"

    @mcp.resource("public://info")
    def info() -> str:
        """For everyone."""
        return "info"

    @mcp.resource("admin://users/{uid}")
    def user(uid: str) -> str:
        """One user, only for admins."""
        return f"user {uid}"

    if GREEDY:

        @mcp.resource("run://{a}{b}{c}{d}{e}!")
        def run(a: str, b: str, c: str, d: str, e: str) -> str:
            """Five expressions in a row, then a literal."""
            return f"run {a} {b} {c} {d} {e}"

    app = mcp.streamable_http_app(host=HOST, json_response=JSON) if V2 else mcp.streamable_http_app()
    if GZIP:
        from starlette.middleware.gzip import GZipMiddleware

        app.add_middleware(GZipMiddleware, minimum_size=0)
    return app


if __name__ == "__main__":
    peer_serve.main(__doc__, build_app)
