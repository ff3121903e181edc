#!/usr/bin/env python3
"""A pinned 2026-07-28 client (PyPI mcp 2.3.0 `Client(url, mode="2026-07-28")`) that listens (`subscriptions/listen`)
for the reverse era bridge's test (issue 23), run under .venv-mcp2 against tests/peers/subscribe_server.py behind the
gateway.

Usage: listen_client_v2.py --url URL [--api-key KEY] [--expect-error]

Opens `client.listen(tools_list_changed=True, prompts_list_changed=True, resource_subscriptions=["note://counter"])`,
calls the tool `bump` (which changes note://counter and notifies), collects the events until both a ResourceUpdated
and a ToolsListChanged arrived (10 s at most), reads note://counter again.
The last stdout line is one JSON object: {"honored": {...}, "events": [...], "counter": "...", "bumped": "..."}.
--api-key sends X-Api-Key on every request; --expect-error expects the listen itself to be refused with a JSON-RPC
error and prints {"code": ..., "message": ..., "data": ...} (exit 0 only then).
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


def with_api_key(key: str) -> None:
    """Every request of the client carries X-Api-Key (the gateway's API-key auth)."""
    import mcp.client.client as client_module
    import mcp.client.streamable_http as sh
    from mcp.shared._httpx_utils import create_mcp_http_client

    plain = sh.streamable_http_client

    def keyed(url: str, **kw: Any) -> Any:
        kw["http_client"] = create_mcp_http_client(headers={"X-Api-Key": key})
        return plain(url, **kw)

    client_module.streamable_http_client = keyed  # type: ignore[assignment]


async def refused(url: str) -> dict[str, Any]:
    from mcp.shared.exceptions import MCPError

    async with Client(url, mode="2026-07-28", read_timeout_seconds=30) as c:
        try:
            async with c.listen(resource_subscriptions=["note://counter"]) as sub:
                return {"error": f"listened: {sub.honored.model_dump(by_alias=True, exclude_none=True)}"}
        except MCPError as e:
            err = e.error
            return {"code": err.code, "message": err.message, "data": err.data}


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
    p.add_argument("--api-key")
    p.add_argument("--expect-error", action="store_true")
    args = p.parse_args()
    if args.api_key:
        with_api_key(args.api_key)
    try:
        out = anyio.run(refused if args.expect_error else run, args.url)
    except BaseException as e:  # noqa: BLE001 - report whatever failed
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.exit(1)
    print(json.dumps(out))
    if "error" in out:
        sys.exit(1)


if __name__ == "__main__":
    main()
