#!/usr/bin/env python3
"""FastMCP 1.30.0 (stateful, sessions) server whose tools ask the client within the call (on the call's own SSE
answer), for the virtual servers' tests (issue 33), run under .venv-mcp1.

Usage: elicit_v1_server.py --port P --name NAME

  tool ask()    -> ctx.elicit("answer?", {answer: str}) then "NAME:accept:ANSWER" (or "NAME:ACTION")
  tool sample() -> ctx.session.create_message("hi") then "NAME:TEXT"
Prints "READY <port>" once serving (peer_serve).
"""

from __future__ import annotations

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

import peer_serve
from peer_serve import HOST


class Answer(BaseModel):
    answer: str


def build(name: str) -> FastMCP:
    mcp = FastMCP(name, host=HOST, log_level="WARNING")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for an answer."""
        r = await ctx.elicit("answer?", schema=Answer)
        return f"{name}:accept:{r.data.answer}" if r.action == "accept" else f"{name}:{r.action}"

    @mcp.tool()
    async def sample(ctx: Context) -> str:
        """Ask the client's model, within the call."""
        r = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
            max_tokens=10,
            related_request_id=ctx.request_id,
        )
        return f"{name}:{getattr(r.content, 'text', '')}"

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build(name).streamable_http_app())
