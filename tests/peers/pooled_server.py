#!/usr/bin/env python3
"""FastMCP 1.30.0 (stateful, sessions) backend for the reverse era bridge's tests (issue 23), run under
.venv-mcp1: the tools of legacy_server.py plus a resource, a prompt, a logging tool and a session counter.

Usage: pooled_server.py --port P --name NAME

Extra over legacy_server.py:
  resource note://greeting        -> "hello from NAME"
  prompt greet(who)               -> one user message "Hello, WHO, from NAME"
  tool log_some()                 -> sends debug, info and warning log messages, returns "logged"
  tool sessions_seen()            -> how many distinct Mcp-Session-Id values this process has served tools to
  tool ask()                      -> ctx.elicit("name?") then "hello NAME" (or "declined: ACTION")
  tool sample()                   -> ctx.session.create_message("hi") then "sampled: TEXT"
  tool roots()                    -> ctx.session.list_roots() then "roots: URI,URI"
  tool two_rounds()               -> an elicitation, then a sampling request, in one call: "NAME/TEXT"
  tool outcomes_seen()               -> what the last elicitations ended with, in order ("accept,cancel,error,...")
Prints "READY <port>" once serving (peer_serve).
"""

from __future__ import annotations

from mcp import types
from mcp.server.fastmcp import Context
from pydantic import BaseModel

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

    class Name(BaseModel):
        name: str

    outcomes: list[str] = []

    async def elicit(ctx: Context) -> str:
        try:
            r = await ctx.elicit("What is your name?", schema=Name)
        except Exception:
            outcomes.append("error")  # the client's side answered the elicitation with an error
            raise
        outcomes.append(r.action)
        return r.data.name if r.action == "accept" else f"declined: {r.action}"

    async def sample_text(ctx: Context) -> str:
        r = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
            max_tokens=10,
        )
        return getattr(r.content, "text", "")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        """Elicit a name."""
        name = await elicit(ctx)
        return f"hello {name}"

    @mcp.tool()
    async def sample(ctx: Context) -> str:
        """Ask the client's model."""
        return f"sampled: {await sample_text(ctx)}"

    @mcp.tool()
    async def roots(ctx: Context) -> str:
        """List the client's roots."""
        r = await ctx.session.list_roots()
        return "roots: " + ",".join(str(x.uri) for x in r.roots)

    @mcp.tool()
    async def two_rounds(ctx: Context) -> str:
        """An elicitation, then a sampling request."""
        name = await elicit(ctx)
        return f"{name}/{await sample_text(ctx)}"

    @mcp.tool()
    def outcomes_seen() -> str:
        """What the elicitations ended with."""
        return ",".join(outcomes)

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build(name).streamable_http_app())
