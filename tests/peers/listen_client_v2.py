#!/usr/bin/env python3
"""A pinned 2026-07-28 client (PyPI mcp 2.3.0 `Client(url, mode="2026-07-28")`) that listens (`subscriptions/listen`)
for the reverse era bridge's test (issue 23), run under .venv-mcp2 against tests/peers/subscribe_server.py behind the
gateway.

Usage: listen_client_v2.py --url URL

Opens `client.listen(tools_list_changed=True, prompts_list_changed=True, resource_subscriptions=["note://counter"])`,
calls the tool `bump` (which changes note://counter and notifies), collects the events until both a ResourceUpdated
and a ToolsListChanged arrived (10 s at most), reads note://counter again.
The last stdout line is one JSON object: {"honored": {...}, "events": [...], "counter": "...", "bumped": "..."}.
Exit 0 on success; on failure exit 1 with {"error": "..."}.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")


async def run(url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(url, mode="2026-07-28", read_timeout_seconds=30) as c:
        async with c.listen(
            tools_list_changed=True, prompts_list_changed=True, resource_subscriptions=["note://counter"]
        ) as sub:
            out["honored"] = sub.honored.model_dump(by_alias=True, exclude_none=True)
            out["bumped"] = text_of(await c.call_tool("bump", {}))
            events: list[str] = []
            with anyio.fail_after(10):
                async for event in sub:
                    if isinstance(event, ResourceUpdated):
                        events.append(f"updated {event.uri}")
                    elif isinstance(event, ToolsListChanged):
                        events.append("tools changed")
                    else:
                        events.append(type(event).__name__)
                    if "tools changed" in events and any(e.startswith("updated") for e in events):
                        break
            out["events"] = events
        read = await c.read_resource("note://counter")
        out["counter"] = "".join(getattr(x, "text", "") for x in read.contents)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    args = p.parse_args()
    try:
        out = anyio.run(run, args.url)
    except BaseException as e:  # noqa: BLE001 - report whatever failed
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
