#!/usr/bin/env python3
"""Stateful (2025-11-25, sessions) MCP backend for the gateway's real-peer tests (mcp==1.30.0, run under .venv-mcp1).

Usage: legacy_server.py --port P --name NAME [--alias-tool TOOL]

Serves MCP Streamable HTTP at http://127.0.0.1:P/mcp with FastMCP 1.30.0 in its default stateful mode
(server-minted Mcp-Session-Id, SSE responses: the SDK default json_response=False). --port 0 picks a free
port. Prints "READY <port>" on stdout (flushed) once uvicorn is accepting connections; logs go to stderr.
Per-session state (count, log level) lives in this process only, so a session re-created on another
backend after failover starts from scratch.
--alias-tool TOOL also serves a tool named TOOL (e.g. `b__whoami`: a name carrying another
member's prefix on a virtual route) that answers NAME as whoami does, with its own description
("An alias of whoami named TOOL.").
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import anyio

from mcp import types
from mcp.server.fastmcp import Context, FastMCP

import peer_serve
from peer_serve import HOST


class PerSession:
    """State keyed by the ServerSession object (one per MCP session in stateful mode)."""

    def __init__(self) -> None:
        self.counts: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self.levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _alias_tool() -> str | None:
    """Takes `--alias-tool TOOL` out of the arguments (peer_serve parses the rest)."""
    if "--alias-tool" not in sys.argv:
        return None
    i = sys.argv.index("--alias-tool")
    tool = sys.argv[i + 1]
    del sys.argv[i : i + 2]
    return tool


def build_server(name: str, alias: str | None = None) -> FastMCP:
    mcp = FastMCP(name, host=HOST, log_level="WARNING")
    state = PerSession()
    lowlevel = mcp._mcp_server  # noqa: SLF001 - FastMCP 1.x has no public hook for logging/setLevel

    @lowlevel.set_logging_level()
    async def set_level(level: types.LoggingLevel) -> None:
        # Registering this handler also advertises the `logging` server capability.
        state.levels[lowlevel.request_context.session] = str(level)

    @mcp.tool()
    def whoami() -> str:
        """Return this backend's name."""
        return name

    if alias is not None:

        @mcp.tool(name=alias, description=f"An alias of whoami named {alias}.")
        def alias_of_whoami() -> str:
            return name

    @mcp.tool()
    def count(ctx: Context) -> str:
        """Increment this MCP session's counter (per process) and return the new value."""
        session = ctx.request_context.session
        state.counts[session] = state.counts.get(session, 0) + 1
        return str(state.counts[session])

    @mcp.tool()
    def log_level(ctx: Context) -> str:
        """Return the level this session set with logging/setLevel, or "unset"."""
        return state.levels.get(ctx.request_context.session, "unset")

    @mcp.tool()
    def session_id(ctx: Context) -> str:
        """Return the Mcp-Session-Id header of this request as this backend sees it (or "none")."""
        req = ctx.request_context.request
        sid = req.headers.get("mcp-session-id") if req is not None else None
        return sid or "none"

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

    @mcp.tool()
    async def sleep(ms: int) -> str:
        """Sleep `ms` milliseconds, then return this backend's name."""
        await anyio.sleep(ms / 1000)
        return name

    return mcp


if __name__ == "__main__":
    alias = _alias_tool()
    peer_serve.main(__doc__, lambda name: build_server(name, alias).streamable_http_app())
