#!/usr/bin/env python3
"""A 2026-07-28 MCP backend with `x-mcp-header` tools (SEP-2243) for the gateway's Mcp-Param tests
(mcp==2.3.0, run under .venv-mcp2).

Usage: param_server.py --port P --name NAME

Serves MCP Streamable HTTP at http://127.0.0.1:P/mcp (stateless). The 2.3.0 server checks every
2026-07-28 `tools/call` against the tool's schema: an argument marked `x-mcp-header` must come
with its `Mcp-Param-*` header, else -32020 (HTTP 400). Tools:
  forecast(region, days, metric=False, note="")  Region, Days, Metric mirrored; answers
      "<name>:<region>:<days>:<metric>:<note>" and the Mcp-Param-* headers it got.
  plain(text)  no mirrored argument.
Prints "READY <port>" on stdout (flushed) once uvicorn is accepting connections.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field

from mcp.server.mcpserver import Context, MCPServer

import peer_serve
from peer_serve import HOST


def header(token: str):
    return Field(json_schema_extra={"x-mcp-header": token})


def build_server(name: str) -> MCPServer:
    mcp = MCPServer(name, log_level="WARNING")

    @mcp.tool()
    def forecast(
        ctx: Context,
        region: Annotated[str, header("Region")],
        days: Annotated[int, header("Days")],
        metric: Annotated[bool, header("Metric")] = False,
        note: str = "",
    ) -> str:
        """A forecast whose region, days and unit go up as Mcp-Param-* headers too."""
        request = ctx.request_context.request
        got = {k: v for k, v in request.headers.items() if k.startswith("mcp-param-")} if request else {}
        return json.dumps({"answer": f"{name}:{region}:{days}:{metric}:{note}", "headers": got}, sort_keys=True)

    @mcp.tool()
    def plain(text: str) -> str:
        """No mirrored argument."""
        return f"{name}:{text}"

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build_server(name).streamable_http_app(stateless_http=True, host=HOST))
