#!/usr/bin/env python3
"""A pinned 2026-07-28 client (PyPI mcp 2.3.0 `Client(url, mode="2026-07-28")`, no probe, no fallback) for the
reverse era bridge's tests (issue 23), run under .venv-mcp2 against tests/peers/pooled_server.py behind the gateway.

Usage: modern_client_v2.py --url URL [--name CLIENT_NAME] SCENARIO

Scenarios:
  tour  -> {"tools": [...], "progress": [...], "progress_text", "resource", "prompt", "logs": [[level, data]...],
            "log_text", "counts": [...], "sessions_seen", "server", "protocol"}
           tools/list, tools/call slow_progress with a progress callback, resources/read note://greeting,
           prompts/get greet, tools/call log_some at log level "info", three tools/call count, sessions_seen.
  count N -> {"counts": [...]} (N tools/call count)
  inputs  -> {"ask", "sample", "roots", "two_rounds", "calls": {"elicit", "sample", "roots"}} with elicitation
             (answers {"name": "ada"}), sampling (answers "from the model") and roots (file:///a, file:///b)
             callbacks: tools ask, sample, roots, two_rounds.
The last stdout line is one JSON object. Exit 0 on success; on failure exit 1 with {"error": "...", "code"?}.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    logs: list[list[Any]] = []

    async def on_log(params: Any) -> None:
        logs.append([str(params.level), params.data])

    info = Implementation(name=args.name, version="1.0.0")
    if args.scenario == "inputs":
        return await inputs(args, info)
    async with Client(
        args.url, mode="2026-07-28", client_info=info, log_level="info", logging_callback=on_log, read_timeout_seconds=30
    ) as c:
        out: dict[str, Any] = {"protocol": c.protocol_version}
        if args.scenario == "count":
            out["counts"] = [text_of(await c.call_tool("count", {})) for _ in range(int(args.rest[0]))]
            return out
        tools = await c.list_tools()
        out["tools"] = sorted(t.name for t in tools.tools)
        progress: list[float] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append(p)

        res = await c.call_tool("slow_progress", {"steps": 3, "delay_ms": 100}, progress_callback=on_progress)
        out["progress"], out["progress_text"] = progress, text_of(res)
        read = await c.read_resource("note://greeting")
        out["resource"] = "".join(getattr(x, "text", "") for x in read.contents)
        prompt = await c.get_prompt("greet", {"who": "ada"})
        out["prompt"] = "".join(getattr(m.content, "text", "") for m in prompt.messages)
        res = await c.call_tool("log_some", {})
        out["log_text"], out["logs"] = text_of(res), logs
        out["counts"] = [text_of(await c.call_tool("count", {})) for _ in range(3)]
        out["sessions_seen"] = text_of(await c.call_tool("sessions_seen", {}))
        out["server"] = text_of(await c.call_tool("whoami", {}))
        return out


async def inputs(args: argparse.Namespace, info: Implementation) -> dict[str, Any]:
    from mcp import types

    calls = {"elicit": 0, "sample": 0, "roots": 0}

    async def elicit(ctx: Any, params: Any) -> Any:
        calls["elicit"] += 1
        return types.ElicitResult(action="accept", content={"name": "ada"})

    async def sample(ctx: Any, params: Any) -> Any:
        calls["sample"] += 1
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="from the model"), model="fixed"
        )

    async def roots(ctx: Any) -> Any:
        calls["roots"] += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///a"), types.Root(uri="file:///b")])

    async with Client(
        args.url,
        mode="2026-07-28",
        client_info=info,
        elicitation_callback=elicit,
        sampling_callback=sample,
        list_roots_callback=roots,
        read_timeout_seconds=30,
    ) as c:
        out: dict[str, Any] = {"protocol": c.protocol_version}
        for tool in ["ask", "sample", "roots", "two_rounds"]:
            out[tool] = text_of(await c.call_tool(tool, {}))
        out["calls"] = calls
        return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--name", default="pinned-py")
    p.add_argument("scenario")
    p.add_argument("rest", nargs="*")
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
