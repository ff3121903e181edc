#!/usr/bin/env python3
"""FastMCP 1.30.0 (stateful, sessions) backend for the reverse era bridge's tests (issue 23), run under
.venv-mcp1: the tools of legacy_server.py plus a resource, a prompt, a logging tool and a session counter.

Usage: pooled_server.py --port P --name NAME

Extra over legacy_server.py:
  resource note://greeting        -> "hello from NAME"
  prompt greet(who)               -> one user message "Hello, WHO, from NAME"
  tool log_some()                 -> sends debug, info and warning log messages, returns "logged"
  tool sessions_seen()            -> how many distinct Mcp-Session-Id values this process has served tools to
Prints "READY <port>" once serving (peer_serve).
"""

from __future__ import annotations

from mcp.server.fastmcp import Context

import peer_serve
from legacy_server import build_server


def build(name: str):
    mcp = build_server(name)
    seen: set[str] = set()

    def note(ctx: Context) -> None:
        req = ctx.request_context.request
        sid = req.headers.get("mcp-session-id") if req is not None else None
        if sid:
            seen.add(sid)

    @mcp.resource("note://greeting")
    def greeting() -> str:
        return f"hello from {name}"

    @mcp.prompt()
    def greet(who: str) -> str:
        return f"Hello, {who}, from {name}"

    @mcp.tool()
    async def log_some(ctx: Context) -> str:
        """Send a debug, an info and a warning log message."""
        note(ctx)
        await ctx.debug("a debug line")
        await ctx.info("an info line")
        await ctx.warning("a warning line")
        return "logged"

    @mcp.tool()
    def sessions_seen(ctx: Context) -> str:
        """How many distinct backend sessions called a tool of this process."""
        note(ctx)
        return str(len(seen))

    @mcp.tool()
    def tally(ctx: Context) -> str:
        """Like count, noting the session."""
        note(ctx)
        return "ok"

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build(name).streamable_http_app())
