#!/usr/bin/env python3
"""Long-lived MCP client driven by JSON lines on stdin (runs under .venv-mcp1 OR .venv-mcp2).

Usage: repl_client.py --url URL [--mode legacy|auto] [--timeout SECS]

Under mcp 1.30.0 (.venv-mcp1): `streamable_http_client(url)` + `ClientSession` (always the 2025-11-25
handshake; --mode must be "legacy", the default there). Under mcp 2.3.0 (.venv-mcp2):
`mcp.Client(url, mode=...)` (default "auto": server/discover probe, fallback to initialize).

On start: connects and prints {"ready": true, "protocol": "<negotiated>", "sdk": "<mcp version>"}
or {"ready": false, "error": "...", "code": int|null, "message": M, "data": D} and exits 1.
Then one JSON answer line (flushed) per command line:
  {"op":"call","name":N,"args":{...}}  -> {"ok":true,"text":"...","isError":false}
  {"op":"list"}                         -> {"ok":true,"tools":[sorted names]}
  {"op":"set_level","level":"debug"}    -> {"ok":true}                       (logging/setLevel)
  {"op":"progress","steps":3,"delay_ms":300}
                                        -> {"ok":true,"progress_times":[...],"result_time":t,"text":"done","isError":false}
                                           (slow_progress; or {"op":"progress","name":TOOL,"args":{...}} for any
                                           tool that reports progress; times in s since the call started)
  {"op":"ping"}                         -> {"ok":true}
  {"op":"session_id"}                   -> {"ok":true,"session_id":"<Mcp-Session-Id the client holds>"|null}
  {"op":"fresh_calls","name":N,"sessions":K}
                                        -> {"ok":true,"texts":[...],"isError":[...],"protocols":[...],"ms":[...]}
                                           K new sessions one after another (same URL and mode), each advertising
                                           elicitation + sampling (answers: accept {"answer": "42"} / text
                                           "hello from the client") and calling tool N (no arguments) as soon as it
                                           is connected, then closed (DELETE): issue 17's race. The command's own
                                           session is not used. The first failure answers the error fields (below)
                                           plus "session": i.
  {"op":"close"}  (or EOF on stdin)     -> {"ok":true} after the session is closed (DELETE sent); exit 0
Any failing command answers {"ok":false,"error_type":T,"code":int|null,"message":M,"data":D}; the client
stays usable afterwards when the SDK does. If the SDK's transport itself dies (mcp 1.30.0 tears the whole
connection down on a non-2xx/404 HTTP answer or a dropped connection), that answer also has "fatal": true,
later commands answer {"ok":false,"error_type":"ClientDead",...}, and close/EOF exits 1.
A malformed line answers {"ok":false,"error_type":"BadCommand",...}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import AsyncExitStack
from importlib.metadata import version as dist_version
from typing import Any

import anyio

SDK = dist_version("mcp")
V2 = int(SDK.split(".")[0]) >= 2


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def error_fields(exc: BaseException) -> dict[str, Any]:
    exc = leaf(exc)
    err = getattr(exc, "error", None)  # McpError (1.x) / MCPError (2.x) carry an ErrorData
    if err is not None and hasattr(err, "code") and hasattr(err, "message"):
        return {"ok": False, "error_type": type(exc).__name__, "code": err.code, "message": err.message,
                "data": getattr(err, "data", None)}
    return {"ok": False, "error_type": type(exc).__name__, "code": None, "message": str(exc), "data": None}


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", None) == "text")


def is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) if V2 else result.isError)


async def on_elicit(_context: Any, _params: Any) -> Any:
    from mcp import types

    return types.ElicitResult(action="accept", content={"answer": "42"})


async def on_sample(_context: Any, _params: Any) -> Any:
    from mcp import types

    content = types.TextContent(type="text", text="hello from the client")
    if V2:
        return types.CreateMessageResult(role="assistant", content=content, model="fixed", stop_reason="endTurn")
    return types.CreateMessageResult(role="assistant", content=content, model="fixed", stopReason="endTurn")


class Peer:
    """The SDK-specific part: connect, and the handful of calls the commands need."""

    def __init__(self, url: str, mode: str, timeout: float) -> None:
        self.url, self.mode, self.timeout = url, mode, timeout
        self.protocol: str | None = None
        self._get_session_id: Any = None
        self.api: Any = None  # mcp.Client (2.x) or ClientSession (1.x)

    async def connect(self, stack: AsyncExitStack) -> None:
        self.api, self.protocol, self._get_session_id = await self.open(stack)

    async def open(self, stack: AsyncExitStack, callbacks: bool = False) -> tuple[Any, str, Any]:
        """A new session on `stack`: (SDK object, negotiated version, session-id getter). With
        `callbacks` it advertises elicitation and sampling and answers them (on_elicit, on_sample)."""
        handlers: dict[str, Any] = (
            {"elicitation_callback": on_elicit, "sampling_callback": on_sample} if callbacks else {}
        )
        if V2:
            import mcp.client.streamable_http as sh
            from mcp import Client

            # The 2.x transport object is private to streamable_http_client(): remember the instance
            # it creates so "session_id" can read its .session_id.
            holder: dict[str, Any] = {}
            orig_init = sh.StreamableHTTPTransport.__init__

            def init(self_: Any, *a: Any, **kw: Any) -> None:
                orig_init(self_, *a, **kw)
                holder["t"] = self_

            sh.StreamableHTTPTransport.__init__ = init  # type: ignore[method-assign]
            # MCPGW_BEARER: a bearer token sent on every request (the gateway's auth tests).
            bearer = os.environ.get("MCPGW_BEARER")
            if bearer:
                import mcp.client.client as client_module
                from mcp.shared._httpx_utils import create_mcp_http_client

                plain = sh.streamable_http_client

                def with_token(url: str, **kw: Any) -> Any:
                    kw["http_client"] = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
                    return plain(url, **kw)

                client_module.streamable_http_client = with_token  # type: ignore[assignment]
            try:
                client = Client(self.url, mode=self.mode, read_timeout_seconds=self.timeout, **handlers)
                api = await stack.enter_async_context(client)
            finally:
                sh.StreamableHTTPTransport.__init__ = orig_init  # type: ignore[method-assign]
            return api, client.protocol_version, lambda: getattr(holder.get("t"), "session_id", None)
        else:
            from datetime import timedelta

            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client

            if self.mode != "legacy":
                raise ValueError(f"mcp {SDK} only speaks the legacy handshake; --mode {self.mode} unsupported")
            read, write, get_sid = await stack.enter_async_context(streamable_http_client(self.url))
            session = ClientSession(read, write, read_timeout_seconds=timedelta(seconds=self.timeout), **handlers)
            api = await stack.enter_async_context(session)
            init = await session.initialize()
            return api, str(init.protocolVersion), get_sid

    def session_id(self) -> str | None:
        try:
            return self._get_session_id() if self._get_session_id else None
        except Exception:  # noqa: BLE001 - best effort
            return None

    async def run(self, cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd.get("op")
        if op == "call":
            res = await self.api.call_tool(cmd["name"], cmd.get("args") or {})
            return {"ok": True, "text": text_of(res), "isError": is_error(res)}
        if op == "list":
            res = await self.api.list_tools()
            return {"ok": True, "tools": sorted(t.name for t in res.tools)}
        if op == "set_level":
            await self.api.set_logging_level(cmd["level"])
            return {"ok": True}
        if op == "ping":
            await self.api.send_ping()
            return {"ok": True}
        if op == "progress":
            times: list[float] = []
            t0 = time.monotonic()

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                times.append(round(time.monotonic() - t0, 4))

            if "name" in cmd:  # any progress-reporting tool, e.g. server-everything's trigger-long-running-operation
                name, arguments = cmd["name"], cmd.get("args") or {}
            else:
                name = "slow_progress"
                arguments = {"steps": int(cmd.get("steps", 3)), "delay_ms": int(cmd.get("delay_ms", 300))}
            res = await self.api.call_tool(name, arguments, progress_callback=on_progress)
            return {"ok": True, "progress_times": times, "result_time": round(time.monotonic() - t0, 4),
                    "text": text_of(res), "isError": is_error(res)}
        if op == "session_id":
            return {"ok": True, "session_id": self.session_id()}
        if op == "fresh_calls":
            return await self.fresh_calls(cmd["name"], int(cmd.get("sessions", 1)))
        raise KeyError(f"unknown op {op!r}")


    async def fresh_calls(self, name: str, sessions: int) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": True, "texts": [], "isError": [], "protocols": [], "ms": []}
        for i in range(sessions):
            t0 = time.monotonic()
            try:
                async with AsyncExitStack() as stack:
                    api, protocol, _ = await self.open(stack, callbacks=True)
                    res = await api.call_tool(name, {})  # no pause: this is the race
            except Exception as e:  # noqa: BLE001 - reported with the session's index
                return {**error_fields(e), "session": i}
            out["texts"].append(text_of(res))
            out["isError"].append(is_error(res))
            out["protocols"].append(protocol)
            out["ms"].append(round((time.monotonic() - t0) * 1000))
        return out


def parse_command(line: str) -> dict[str, Any]:
    """A command; a malformed line yields {"op": None, "bad": reason}."""
    try:
        cmd = json.loads(line)
        if not isinstance(cmd, dict):
            raise ValueError("command must be a JSON object")
        return cmd
    except ValueError as e:
        return {"op": None, "bad": str(e)}


async def stdin_reader(send: Any) -> None:
    """Feed stdin lines into `send`, outside the SDK's task groups, so no line is lost if they die."""
    async with send:
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                return  # EOF: closing the stream ends the receiver's loop
            if line.strip():
                await send.send(parse_command(line))


async def main_async(args: argparse.Namespace) -> int:
    send, recv = anyio.create_memory_object_stream[dict[str, Any]](100)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stdin_reader, send)
        code = await session_loop(args, recv)
        tg.cancel_scope.cancel()
    return code


async def read_command(recv: Any) -> dict[str, Any] | None:
    try:
        return await recv.receive()
    except anyio.EndOfStream:
        return None


async def session_loop(args: argparse.Namespace, recv: Any) -> int:
    import warnings

    warnings.simplefilter("ignore")  # 2.x deprecates logging/setLevel; keep stderr quiet
    peer = Peer(args.url, args.mode, args.timeout)
    pending: dict[str, Any] | None = None  # command in flight when the transport died
    closing = False
    ready = False
    try:
        async with AsyncExitStack() as stack:
            try:
                await peer.connect(stack)  # bounded by the SDK's read timeout
            except Exception as e:  # noqa: BLE001
                emit({"ready": False, "error": f"{type(leaf(e)).__name__}: {leaf(e)}", **error_fields(e)})
                return 1
            emit({"ready": True, "protocol": peer.protocol, "sdk": SDK})
            ready = True
            while True:
                cmd = await read_command(recv)
                if cmd is None or cmd.get("op") == "close":
                    closing = True
                    break  # leaving the stack closes the session (DELETE)
                if "bad" in cmd:
                    emit({"ok": False, "error_type": "BadCommand", "code": None, "message": cmd["bad"], "data": None})
                    continue
                pending = cmd
                try:
                    out = await peer.run(cmd)
                except KeyError as e:
                    out = {"ok": False, "error_type": "BadCommand", "code": None, "message": str(e), "data": None}
                except Exception as e:  # noqa: BLE001 - reported, the session stays usable
                    out = error_fields(e)
                pending = None
                emit(out)
    except BaseException as e:  # noqa: BLE001 - the SDK's transport task group died under us
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if not ready:
            emit({"ready": False, "error": f"{type(leaf(e)).__name__}: {leaf(e)}", **error_fields(e)})
            return 1
        if closing and pending is None:
            # The transport failed while closing (e.g. DELETE to a dead server): the session is gone anyway.
            emit({"ok": True, "close_error": f"{type(leaf(e)).__name__}: {leaf(e)}"})
            return 0
        fatal = {**error_fields(e), "fatal": True}
        if pending is not None:
            emit(fatal)
        dead = {"ok": False, "error_type": "ClientDead", "code": None,
                "message": f"{fatal['error_type']}: {fatal['message']}", "data": None}
        while True:
            cmd = await read_command(recv)
            if cmd is None or cmd.get("op") == "close":
                emit(dead)
                return 1
            emit(dead)
    emit({"ok": True})
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description="JSON-lines MCP client", usage=__doc__.split("\n\n")[1].split("\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--mode", default="auto" if V2 else "legacy", help="legacy | auto (auto needs mcp 2.x)")
    p.add_argument("--timeout", type=float, default=30.0, help="per-request read timeout, seconds")
    args = p.parse_args()
    try:
        code = anyio.run(main_async, args)
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    # The stdin reader thread may still sit in readline() (close before EOF); don't wait for it.
    os._exit(code)


if __name__ == "__main__":
    main()
