#!/usr/bin/env python3
"""A 2026-07-28 server whose tools depend on who asks, read from a request header (PyPI mcp 2.3.0 lowlevel
`Server`, stateless HTTP), run under .venv-mcp2, for the virtual servers' per-caller names maps (issue 59).

Usage: header_tools_server.py --port P --name NAME --by HEADER --tools CALLER=T1,T2 [--tools CALLER=...]

The caller is the value of request header HEADER (an `Authorization: Bearer X` counts as `X`): the gateway's
identity header, or the client's own `Authorization` passed through. `tools/list` lists that caller's tools
(none for a caller not given); a `tools/call` of one of them answers "NAME:TOOL:CALLER", of any other tool
an error result ("NAME has no TOOL for CALLER"). Prints "READY <port>" once serving (peer_serve).
"""

from __future__ import annotations

import argparse
import sys

import mcp_types as types
from mcp.server.lowlevel.server import Server

import peer_serve
from peer_serve import HOST


def build(name: str, header: str, tools: dict[str, list[str]]) -> Server:
    def caller_of(ctx) -> str:
        request = getattr(ctx, "request", None)
        value = request.headers.get(header, "") if request is not None else ""
        return value[len("Bearer ") :] if value.startswith("Bearer ") else value

    async def list_tools(ctx, params) -> types.ListToolsResult:
        mine = tools.get(caller_of(ctx), [])
        return types.ListToolsResult(
            tools=[types.Tool(name=t, description=f"tool {t}", input_schema={"type": "object"}) for t in mine]
        )

    async def call_tool(ctx, params) -> types.CallToolResult:
        caller = caller_of(ctx)
        if params.name in tools.get(caller, []):
            text, error = f"{name}:{params.name}:{caller}", False
        else:
            text, error = f"{name} has no {params.name} for {caller}", True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


if __name__ == "__main__":
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--by", required=True)
    extra.add_argument("--tools", action="append", default=[])
    known, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    table: dict[str, list[str]] = {}
    for entry in known.tools:
        caller, _, names = entry.partition("=")
        table[caller] = [n for n in names.split(",") if n]
    peer_serve.main(
        __doc__,
        lambda name: build(name, known.by, table).streamable_http_app(stateless_http=True, host=HOST),
    )
