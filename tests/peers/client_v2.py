#!/usr/bin/env python3
"""MCP 2.3.0 client driver for the gateway's real-peer tests (run under .venv-mcp2).

Usage: client_v2.py --url URL [--mode auto|legacy|stateless|2026-07-28] [--timeout SECS] SCENARIO ARGS...

Scenarios:
  list                                 -> {"tools": [sorted names]}
  call NAME ARGS_JSON                  -> {"text": "...", "isError": bool}
  call-many NAME ARGS_JSON N           -> {"texts": [...]}            (N sequential calls, one client)
  big N                                -> {"text": "..."}             (echo_size with "x"*N)
  progress STEPS DELAY_MS              -> {"progress_times": [...], "result_time": t, "text": "..."}
                                          (seconds since the call started, time.monotonic())
  call-expect-error NAME ARGS_JSON     -> {"error_type", "code", "message", "data", "phase"}; exit 0 iff an
                                          MCPError (JSON-RPC error) was raised, at connect or call ("phase");
                                          a success (even isError) or a non-MCP exception exits 1

Every success object also carries "protocol": the negotiated protocol version.
Exactly one JSON object is printed, on stdout's last line. Exit 0 on success; on failure exit 1 with
{"error": "<ExceptionType>: <message>"} (plus "code"/"data" when it is an MCPError).
"--mode stateless" is an alias for the modern version pin "2026-07-28" (no discover probe).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import anyio
from mcp_types.version import LATEST_MODERN_VERSION

from mcp import Client
from mcp.shared.exceptions import MCPError


class ConnectPhaseError(Exception):
    """Wraps an exception raised while entering the client (handshake / discover)."""

    def __init__(self, inner: BaseException):
        super().__init__(str(inner))
        self.inner = inner


def leaf(exc: BaseException) -> BaseException:
    """Unwrap (single-member) exception groups down to the first real exception."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")


def error_fields(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MCPError):
        return {
            "error_type": type(exc).__name__,
            "code": exc.code,
            "message": exc.message,
            "data": exc.data,
        }
    return {"error_type": type(exc).__name__, "code": None, "message": str(exc), "data": None}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    mode = LATEST_MODERN_VERSION if args.mode == "stateless" else args.mode
    sc = args.scenario
    rest = args.args

    def need(n: int) -> None:
        if len(rest) != n:
            raise SystemExit(f"scenario {sc!r} takes {n} argument(s), got {len(rest)}")

    try:
        client = Client(args.url, mode=mode, read_timeout_seconds=args.timeout)
        await client.__aenter__()
    except BaseException as e:  # noqa: BLE001 - reported to the caller
        raise ConnectPhaseError(leaf(e)) from e
    exc_info: tuple[Any, Any, Any] = (None, None, None)
    try:
        out: dict[str, Any]
        if sc == "list":
            need(0)
            res = await client.list_tools()
            out = {"tools": sorted(t.name for t in res.tools)}
        elif sc == "call":
            need(2)
            res = await client.call_tool(rest[0], json.loads(rest[1]))
            out = {"text": text_of(res), "isError": bool(res.is_error)}
        elif sc == "call-many":
            need(3)
            name, arguments, n = rest[0], json.loads(rest[1]), int(rest[2])
            texts = []
            for _ in range(n):
                res = await client.call_tool(name, arguments)
                if res.is_error:
                    raise RuntimeError(f"tool returned isError: {text_of(res)}")
                texts.append(text_of(res))
            out = {"texts": texts}
        elif sc == "big":
            need(1)
            res = await client.call_tool("echo_size", {"text": "x" * int(rest[0])})
            out = {"text": text_of(res), "isError": bool(res.is_error)}
        elif sc == "progress":
            need(2)
            times: list[float] = []
            t0 = time.monotonic()

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                times.append(round(time.monotonic() - t0, 4))

            res = await client.call_tool(
                "slow_progress",
                {"steps": int(rest[0]), "delay_ms": int(rest[1])},
                progress_callback=on_progress,
            )
            result_time = round(time.monotonic() - t0, 4)
            out = {"progress_times": times, "result_time": result_time, "text": text_of(res)}
        elif sc == "call-expect-error":
            need(2)
            try:
                res = await client.call_tool(rest[0], json.loads(rest[1]))
            except MCPError as e:
                out = {**error_fields(e), "phase": "call"}
            else:
                out = {
                    "error": "call succeeded but an error was expected",
                    "text": text_of(res),
                    "isError": bool(res.is_error),
                    "unexpected_success": True,
                }
        else:
            raise SystemExit(f"unknown scenario {sc!r}")
        out["protocol"] = client.protocol_version
        return out
    except BaseException as e:
        exc_info = (type(e), e, e.__traceback__)
        raise
    finally:
        try:
            await client.__aexit__(*exc_info)
        except BaseException:  # noqa: BLE001 - the scenario's own outcome wins
            if exc_info[1] is None:
                raise


def main() -> None:
    p = argparse.ArgumentParser(description="MCP 2.3.0 test client", usage=__doc__.split("\n\n")[1].split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--mode", default="auto", help="auto | legacy | stateless | <modern version>")
    p.add_argument("--timeout", type=float, default=30.0, help="per-request and overall timeout, seconds")
    p.add_argument("scenario")
    p.add_argument("args", nargs="*")
    args = p.parse_args()

    async def guarded() -> dict[str, Any]:
        with anyio.fail_after(args.timeout * 2):
            return await run(args)

    try:
        out = anyio.run(guarded)
        code = 1 if out.get("unexpected_success") else 0
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001
        phase = "call"
        e = leaf(e)
        if isinstance(e, ConnectPhaseError):
            phase, e = "connect", e.inner
        if args.scenario == "call-expect-error" and isinstance(e, MCPError):
            # A JSON-RPC error while connecting (e.g. the gateway rejects initialize) also counts.
            out, code = {**error_fields(e), "phase": phase}, 0
        else:
            out = {"error": f"{type(e).__name__}: {e}", "phase": phase}
            if args.scenario == "call-expect-error":
                out.update(error_fields(e))
            elif isinstance(e, MCPError):
                out.update(code=e.code, data=e.data)
            code = 1
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
