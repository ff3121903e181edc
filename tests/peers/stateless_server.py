#!/usr/bin/env python3
"""Stateless MCP backend for the gateway's real-peer tests (mcp==2.3.0, run under .venv-mcp2).

Usage: stateless_server.py --port P --name NAME [--cache-ttl-ms MS [--cache-scope public|private]]

Serves MCP Streamable HTTP at http://127.0.0.1:P/mcp with stateless_http=True (answers both the
2026-07-28 stateless era and per-request legacy initialize). --port 0 picks a free port.
Prints "READY <port>" on stdout (flushed) once uvicorn is accepting connections.
--cache-ttl-ms gives every cacheable method's result (server/discover, the lists, resources/read)
that `ttlMs` and `cacheScope` (default private), as `MCPServer(cache_hints=...)` does (SEP-2549).
"""

from __future__ import annotations

import sys

import anyio

from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.mcpserver import Context, MCPServer

import peer_serve
from peer_serve import HOST


def take_flag(flag: str) -> str | None:
    """Removes `flag VALUE` from the command line (the shared parser knows only its own); VALUE."""
    if flag not in sys.argv:
        return None
    i = sys.argv.index(flag)
    value = sys.argv[i + 1]
    del sys.argv[i : i + 2]
    return value


TTL_MS = take_flag("--cache-ttl-ms")
SCOPE = take_flag("--cache-scope") or "private"


def build_server(name: str) -> MCPServer:
    hints = None
    if TTL_MS is not None:
        hint = CacheHint(ttl_ms=int(TTL_MS), scope=SCOPE)  # type: ignore[arg-type]
        hints = {method: hint for method in CACHEABLE_METHODS}
    mcp = MCPServer(name, log_level="WARNING", cache_hints=hints)

    @mcp.tool()
    def whoami() -> str:
        """Return this backend's name."""
        return name

    @mcp.tool()
    def report_sales(region: str = "all") -> str:
        """Return a fake sales report tagged with the backend name."""
        return f"{name}:report:{region}"

    @mcp.tool()
    def admin_reset() -> str:
        """A tool the gateway's authz rules reserve for the `admin` scope in the auth tests."""
        return f"{name}:reset"

    @mcp.tool()
    def echo_size(text: str) -> str:
        """Return the length of `text` (used with big arguments)."""
        return str(len(text))

    @mcp.tool()
    def header_digest(ctx: Context, name: str) -> str:
        """The SHA-256 (hex) of every value of request header `name` as received, joined by " | " (or "none").

        Digests, not values: a test checks which secret a backend got without the secret
        appearing in any answer (so in no log of the answer either)."""
        return peer_serve.header_digests(ctx.request_context.request, name)

    @mcp.tool()
    def token_claims(ctx: Context) -> str:
        """The claims of the bearer token this request came with (JSON), or "none"."""
        return peer_serve.token_claims(ctx.request_context.request)

    @mcp.tool()
    async def slow_progress(ctx: Context, steps: int = 3, delay_ms: int = 300) -> str:
        """Send `steps` progress notifications, delay_ms apart, then return "done"."""
        for i in range(steps):
            if i:
                await anyio.sleep(delay_ms / 1000)
            await ctx.report_progress(i + 1, steps, f"step {i + 1}/{steps}")
        await anyio.sleep(delay_ms / 1000)
        return "done"

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build_server(name).streamable_http_app(stateless_http=True, host=HOST))
