#!/usr/bin/env python3
"""Issue 17's client side with PyPI mcp==1.30.0 (run with .venv-mcp1/bin/python).

Usage: elicit_race_client.py --url URL --runs N --timeout-ms T [--tool ask|sample]

Each run: a new `streamable_http_client(url)` + `ClientSession` (elicitation_callback and
sampling_callback, so both capabilities are advertised; they answer at once: accept
{"answer": "42"} / the text "hello from the client"), `initialize()`, then the tool call at once,
then the session ends (the SDK sends DELETE). The 1.30.0 transport starts its GET SSE stream as a
task when it takes `notifications/initialized` off its queue (before POSTing it), and POSTs the
tools/call only after that notification's 202; see tests/peers/README.md.
A run is a stall when it fails or takes more than T ms (each run is bounded by 2*T + 2 s).
Prints one JSON line: {"runs":N,"stalls":K,"failures":[first 5 messages],"ms":[per-run ms]}.
Exit 0 whenever it could run; bad arguments -> exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import timedelta
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

EXPECTED = {"ask": "accept:42", "sample": "hello from the client"}


async def on_elicit(_context: Any, _params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"answer": "42"})


async def on_sample(_context: Any, _params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="hello from the client"),
        model="fixed",
        stopReason="endTurn",
    )


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def one_run(url: str, tool: str, timeout_s: float) -> None:
    async with streamable_http_client(url) as (read, write, _sid):
        async with ClientSession(
            read,
            write,
            read_timeout_seconds=timedelta(seconds=timeout_s),
            elicitation_callback=on_elicit,
            sampling_callback=on_sample,
        ) as session:
            await session.initialize()
            # No pause here: this is the race.
            res = await session.call_tool(tool, {}, read_timeout_seconds=timedelta(seconds=timeout_s))
            got = "".join(c.text for c in res.content if isinstance(c, types.TextContent))
            if res.isError or got != EXPECTED[tool]:
                raise RuntimeError(f"unexpected result {res.model_dump_json()}")


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--timeout-ms", type=int, default=2000)
    p.add_argument("--tool", choices=["ask", "sample"], default="ask")
    a = p.parse_args()
    if a.runs < 1 or a.timeout_ms < 1:
        p.error("--runs and --timeout-ms must be positive")
    timeout_s = a.timeout_ms / 1000
    ms: list[int] = []
    failures: list[str] = []
    stalls = 0
    for i in range(a.runs):
        t0 = time.perf_counter()
        error: str | None = None
        try:
            with anyio.fail_after(2 * timeout_s + 2):
                await one_run(a.url, a.tool, timeout_s)
        except BaseException as exc:  # noqa: BLE001 - every failure is data
            if isinstance(exc, KeyboardInterrupt):
                raise
            e = leaf(exc)
            error = f"{type(e).__name__}: {e}"
        took = round((time.perf_counter() - t0) * 1000)
        ms.append(took)
        if error is None and took > a.timeout_ms:
            error = f"run took {took} ms (> {a.timeout_ms})"
        if error is not None:
            stalls += 1
            if len(failures) < 5:
                failures.append(f"run {i}: {error}")
    sys.stdout.write(json.dumps({"runs": a.runs, "stalls": stalls, "failures": failures, "ms": ms}, separators=(",", ":")) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main)
