#!/usr/bin/env python3
"""A 2026-07-28 server that pages its own tools/list (PyPI mcp 2.3.0 lowlevel `Server`, stateless HTTP), run
under .venv-mcp2, for the virtual servers' paging tests (issue 33).

Usage: paged_server.py --port P --name NAME [--tools N] [--page K] [--delay-ms D] [--description-bytes B]

Tools `t00` .. `t{N-1}` (default 7), K per page (default 3), `nextCursor` the index of the next page's first tool
as text; a tools/call of `tNN` answers "NAME:tNN". --delay-ms: each tools/list answers after D ms
(a wait, not work: a member far away, for the benchmarks). --description-bytes: each tool's description is
B bytes long (a large list made of few tools: quick to serialize). Prints "READY <port>" once serving (peer_serve).
"""

from __future__ import annotations

import argparse
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server

import peer_serve
from peer_serve import HOST


def build(name: str, count: int, page: int, delay_ms: int = 0, description_bytes: int = 0) -> Server:
    names = [f"t{i:02d}" for i in range(count)]
    padding = "x" * description_bytes

    async def list_tools(ctx, params) -> types.ListToolsResult:
        if delay_ms:
            await anyio.sleep(delay_ms / 1000)
        start = int(params.cursor) if params is not None and params.cursor else 0
        chunk = names[start : start + page]
        tools = [types.Tool(name=n, description=padding or f"tool {n}", input_schema={"type": "object"}) for n in chunk]
        more = start + page < len(names)
        return types.ListToolsResult(tools=tools, next_cursor=str(start + page) if more else None)

    async def call_tool(ctx, params) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{name}:{params.name}")])

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


if __name__ == "__main__":
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--tools", type=int, default=7)
    extra.add_argument("--page", type=int, default=3)
    extra.add_argument("--delay-ms", type=int, default=0)
    extra.add_argument("--description-bytes", type=int, default=0)
    known, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    peer_serve.main(
        __doc__,
        lambda name: build(name, known.tools, known.page, known.delay_ms, known.description_bytes).streamable_http_app(stateless_http=True, host=HOST),
    )
