#!/usr/bin/env python3
"""A pinned 2026-07-28 client (PyPI mcp 2.3.0 `Client(url, mode="2026-07-28")`) on a virtual route (issue 33), run
under .venv-mcp2.

Usage: virtual_client_v2.py --url URL TOOL...

Lists every tool (following `nextCursor` page by page), calls each TOOL (no arguments), reads
note://greeting, gets the prompt greet(who=ada) and calls `ask` with an elicitation callback that answers
{"name": "ada"}. The last stdout line is one JSON object:
  {"server", "pages", "tools": [...], "calls": {TOOL: text}, "resource", "prompt", "ask", "elicited"}
Exit 0 on success; on failure exit 1 with {"error": "...", "code"?}.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import Client, types
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    elicited = []

    async def elicit(ctx: Any, params: Any) -> Any:
        elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "ada"})

    info = Implementation(name="virtual-py", version="1.0.0")
    async with Client(
        args.url, mode="2026-07-28", client_info=info, elicitation_callback=elicit, read_timeout_seconds=30
    ) as c:
        out: dict[str, Any] = {"protocol": c.protocol_version}
        tools: list[str] = []
        cursor, pages = None, 0
        while True:
            page = await c.list_tools(cursor=cursor)
            pages += 1
            tools.extend(t.name for t in page.tools)
            cursor = page.next_cursor
            if not cursor or pages > 20:
                break
        out["pages"], out["tools"] = pages, tools
        out["calls"] = {t: text_of(await c.call_tool(t, {})) for t in args.tools}
        read = await c.read_resource("note://greeting")
        out["resource"] = "".join(getattr(x, "text", "") for x in read.contents)
        prompt = await c.get_prompt("greet", {"who": "ada"})
        out["prompt"] = "".join(getattr(m.content, "text", "") for m in prompt.messages)
        out["ask"] = text_of(await c.call_tool("ask", {}))
        out["elicited"] = elicited
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
        if isinstance(e, MCPError):
            out.update(code=e.code, data=e.data)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
