#!/usr/bin/env python3
"""A session-era client (PyPI mcp 1.30.0 `streamable_http_client` + `ClientSession`) on a virtual route (issue 33),
run under .venv-mcp1, with elicitation and sampling callbacks (accept {"answer": "42"}; the text "hello from the
client").

Usage: virtual_client_v1.py --url URL TOOL...

Initializes, lists the tools, calls each TOOL (no arguments) in one session, then closes it (DELETE). The last
stdout line is one JSON object: {"protocol", "server", "tools": [...], "calls": {TOOL: text}, "elicited": N,
"sampled": N, "rooted": N}; exit 0. On failure {"error": "..."} and exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def run(args: argparse.Namespace) -> dict[str, Any]:
    seen = {"elicited": 0, "sampled": 0, "rooted": 0}

    async def on_elicit(_ctx: Any, _params: Any) -> Any:
        seen["elicited"] += 1
        return types.ElicitResult(action="accept", content={"answer": "42"})

    async def on_sample(_ctx: Any, _params: Any) -> Any:
        seen["sampled"] += 1
        content = types.TextContent(type="text", text="hello from the client")
        return types.CreateMessageResult(role="assistant", content=content, model="fixed", stopReason="endTurn")

    async def on_roots(_ctx: Any) -> Any:
        seen["rooted"] += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///a"), types.Root(uri="file:///b")])

    async with streamable_http_client(args.url) as (read, write, _):
        async with ClientSession(
            read, write, elicitation_callback=on_elicit, sampling_callback=on_sample, list_roots_callback=on_roots
        ) as s:
            init = await s.initialize()
            out: dict[str, Any] = {"protocol": init.protocolVersion, "server": init.serverInfo.name}
            out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            calls = {}
            for tool in args.tools:
                r = await s.call_tool(tool, {})
                calls[tool] = "".join(getattr(c, "text", "") for c in r.content)
            out["calls"] = calls
            out.update(seen)
            return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("tools", nargs="*")
    args = p.parse_args()
    try:
        out, code = anyio.run(run, args), 0
    except BaseException as e:  # noqa: BLE001 - reported to the caller
        e = leaf(e)
        out, code = {"error": f"{type(e).__name__}: {e}"}, 1
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
