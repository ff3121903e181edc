#!/usr/bin/env python3
"""A real MCP 1.30.0 client (ClientSession over streamable_http_client, run under .venv-mcp1)
that sends a W3C `traceparent` with its requests, as an instrumented client does: the gateway
must continue that trace. Driven by JSON lines on stdin, one JSON answer line per command:

  {"op":"call","name":N,"args":{...},"traceparent":"00-<trace>-<span>-01"}
                      -> {"ok":true,"text":"..."}   (every HTTP request of the call carries it)
  {"op":"close"}      -> {"ok":true}, then exit 0

Usage: traced_client.py --url URL
Prints {"ready": true} once the session is initialized; a failing command answers
{"ok": false, "error": "..."}.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The transport sends from tasks started at connect time: a plain shared value, not a
# contextvar, reaches them. Calls are sequential.
CURRENT: dict[str, str | None] = {"traceparent": None}


async def add_traceparent(request: Any) -> None:
    if CURRENT["traceparent"]:
        request.headers["traceparent"] = CURRENT["traceparent"]


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(url: str) -> int:
    async with AsyncExitStack() as stack:
        http = create_mcp_http_client()
        http.event_hooks["request"].append(add_traceparent)
        await stack.enter_async_context(http)
        read, write, _ = await stack.enter_async_context(streamable_http_client(url, http_client=http))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        emit({"ready": True})
        stdin = anyio.wrap_file(sys.stdin)
        async for line in stdin:
            cmd = json.loads(line)
            if cmd.get("op") == "close":
                break
            CURRENT["traceparent"] = cmd.get("traceparent")
            try:
                res = await session.call_tool(cmd["name"], cmd.get("args") or {})
                text = "".join(getattr(c, "text", "") for c in res.content)
                emit({"ok": True, "text": text})
            except Exception as e:  # noqa: BLE001 - reported to the test
                emit({"ok": False, "error": f"{type(e).__name__}: {e}"})
            finally:
                CURRENT["traceparent"] = None
    emit({"ok": True})
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    sys.exit(anyio.run(main, p.parse_args().url))
