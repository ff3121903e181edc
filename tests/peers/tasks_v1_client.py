#!/usr/bin/env python3
"""One long-lived legacy (2025-11-25) session using the experimental Tasks of mcp 1.30.0 (SEP-1686), driven by
a line protocol on stdin so a test can interleave actions (kill a backend, ...) between steps. Run with
.venv-mcp1/bin/python.

Usage: tasks_v1_client.py --url URL [--timeout SECS]

`streamablehttp_client(url)` + `ClientSession` (`session.experimental.*`), one MCP session for the whole run.
After initialize it prints the line `READY`; if initialize fails, one JSON object {"error": ...} and exit 1.
Then one command per stdin line, one JSON line (flushed) per command:
  create NAME ARGS_JSON [TTL_MS]  tools/call with params.task = {"ttl": TTL_MS} (default 60000)
                                  -> {"taskId", "status", "ttl", "pollInterval", "createdAt", "lastUpdatedAt"}
                                     (the CreateTaskResult's task); a plain CallToolResult instead (the server
                                     made no task) -> {"noTask": true, "text", "isError"}
  get TASKID                      tasks/get     -> the task: {"taskId", "status", ["statusMessage"], ...}
  result TASKID                   tasks/result  -> {"text": joined text content or null, "isError": bool|null}
                                                   (blocks until the task is terminal, up to --timeout)
  list                            tasks/list    -> {"tasks": [taskId...], "status": {taskId: status}}
  cancel TASKID                   tasks/cancel  -> the task as cancelled: {"taskId", "status", ...}
  call NAME ARGS_JSON             plain tools/call -> {"text", "isError"}
  notifications                   -> {"notifications": [{"taskId", "status"}...]}: the notifications/tasks/status
                                     received since the previous `notifications` (or the start)
  session                         -> {"sessionId": the Mcp-Session-Id the client holds, or null}
  quit  (or EOF)                  -> {"ok": true} once the session is closed (DELETE sent); exit 0
A JSON-RPC error answer prints {"error": {"code", "message", "data"}} and the session stays usable. Any other
failure prints {"error": {"code": null, "message": "<Type>: <message>", "data": null}}; if it was the SDK's
transport dying under the session (1.30.0 does on a refused connection or a non-2xx answer other than 404),
that line also has "fatal": true and every later command answers {"error": {... "message": "ClientDead: ..."}},
quit/EOF then exits 1. A malformed line -> {"error": {"code": null, "message": "BadCommand: ...", "data": null}}.
Read timeout of one request: --timeout seconds (default 30), reported by the SDK as McpError 408.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

import anyio
from pydantic import RootModel

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError

# ClientSession.experimental / streamablehttp_client are deprecated in 1.30.0; they are what this client tests.
warnings.simplefilter("ignore")


class CreateOrCall(RootModel[types.CreateTaskResult | types.CallToolResult]):
    """A task-augmented tools/call answers a CreateTaskResult, unless the server ran it as a plain call."""


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def error_of(exc: BaseException) -> dict[str, Any]:
    exc = leaf(exc)
    if isinstance(exc, McpError):
        return {"error": {"code": exc.error.code, "message": exc.error.message, "data": exc.error.data}}
    return {"error": {"code": None, "message": f"{type(exc).__name__}: {exc}", "data": None}}


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_of(content: Any) -> str | None:
    if not content:
        return None
    return "".join(c.get("text", "") if isinstance(c, dict) else getattr(c, "text", "") for c in content)


class BadCommand(Exception):
    pass


def parse(line: str) -> tuple[str, list[Any]]:
    parts = line.strip().split(None, 1)
    op, rest = parts[0], (parts[1] if len(parts) > 1 else "")
    if op in ("get", "result", "cancel"):
        if not rest or len(rest.split()) != 1:
            raise BadCommand(f"{op} takes one TASKID")
        return op, [rest.strip()]
    if op in ("create", "call"):
        name, _, tail = rest.partition(" ")
        if not name:
            raise BadCommand(f"{op} takes NAME ARGS_JSON")
        tail = tail.strip() or "{}"
        ttl = 60000
        if op == "create":
            # ARGS_JSON may contain spaces; an optional TTL_MS integer may follow it.
            head, _, last = tail.rpartition(" ")
            if head and last.isdigit():
                tail, ttl = head, int(last)
        try:
            args = json.loads(tail)
        except json.JSONDecodeError as e:
            raise BadCommand(f"ARGS_JSON: {e}") from None
        if not isinstance(args, dict):
            raise BadCommand("ARGS_JSON must be an object")
        return op, [name, args, ttl]
    if op in ("list", "notifications", "session", "quit"):
        if rest:
            raise BadCommand(f"{op} takes no arguments")
        return op, []
    raise BadCommand(f"unknown command {op!r}")


class Peer:
    def __init__(self, session: ClientSession, get_session_id: Any, notes: list[dict[str, Any]]) -> None:
        self.s, self.get_session_id, self.notes = session, get_session_id, notes

    async def run(self, op: str, a: list[Any]) -> dict[str, Any]:
        x = self.s.experimental
        if op == "create":
            name, args, ttl = a
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(name=name, arguments=args, task=types.TaskMetadata(ttl=ttl))
            )
            res = (await self.s.send_request(types.ClientRequest(request), CreateOrCall)).root
            if isinstance(res, types.CreateTaskResult):
                return dump(res.task)
            return {"noTask": True, "text": text_of(res.content), "isError": res.isError}
        if op == "get":
            return dump(await x.get_task(a[0]))
        if op == "result":
            res = dump(await x.get_task_result(a[0], types.GetTaskPayloadResult))
            return {"text": text_of(res.get("content")), "isError": res.get("isError")}
        if op == "list":
            tasks = (await x.list_tasks()).tasks
            return {"tasks": [t.taskId for t in tasks], "status": {t.taskId: t.status for t in tasks}}
        if op == "cancel":
            return dump(await x.cancel_task(a[0]))
        if op == "call":
            res = await self.s.call_tool(a[0], a[1])
            return {"text": text_of(res.content), "isError": res.isError}
        if op == "notifications":
            out, self.notes[:] = list(self.notes), []
            return {"notifications": out}
        if op == "session":
            return {"sessionId": self.get_session_id()}
        raise BadCommand(op)


async def stdin_reader(send: Any) -> None:
    """Feeds stdin lines into `send`, outside the SDK's task groups, so no line is lost if they die."""
    async with send:
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                return  # EOF
            if line.strip():
                await send.send(line)


async def next_line(recv: Any) -> str | None:
    try:
        return await recv.receive()
    except anyio.EndOfStream:
        return None


async def session_loop(args: argparse.Namespace, recv: Any) -> int:
    notes: list[dict[str, Any]] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", None)
        if isinstance(root, types.TaskStatusNotification):
            notes.append({"taskId": root.params.taskId, "status": root.params.status})

    ready = closing = False
    init_error: BaseException | None = None
    pending = False  # a command was in flight when the transport died
    try:
        async with AsyncExitStack() as stack:
            read, write, get_sid = await stack.enter_async_context(streamablehttp_client(args.url, timeout=20))
            session = await stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=timedelta(seconds=args.timeout),
                              message_handler=on_message)
            )
            try:
                await session.initialize()
            except Exception as e:  # noqa: BLE001 - reported once, below, after the transport is closed
                init_error = e
                raise
            print("READY", flush=True)
            ready = True
            peer = Peer(session, get_sid, notes)
            while True:
                line = await next_line(recv)
                try:
                    op, a = parse(line) if line is not None else ("quit", [])
                except BadCommand as e:
                    emit({"error": {"code": None, "message": f"BadCommand: {e}", "data": None}})
                    continue
                if op == "quit":
                    closing = True
                    break  # leaving the stack closes the session (DELETE)
                pending = True
                try:
                    out = await peer.run(op, a)
                except Exception as e:  # noqa: BLE001 - reported; the session stays usable
                    out = error_of(e)
                pending = False
                emit(out)
    except BaseException as e:  # noqa: BLE001 - the SDK's transport task group died under us
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if not ready:
            emit(error_of(init_error or e))
            return 1
        if closing and not pending:
            emit({"ok": True, "closeError": error_of(e)["error"]["message"]})  # e.g. DELETE to a dead server
            return 0
        fatal = error_of(e)
        if pending:
            emit({**fatal, "fatal": True})
        dead = {"error": {"code": None, "message": f"ClientDead: {fatal['error']['message']}", "data": None}}
        while True:
            line = await next_line(recv)
            emit(dead)
            if line is None or line.strip() == "quit":
                return 1
    emit({"ok": True})
    return 0


async def main_async(args: argparse.Namespace) -> int:
    send, recv = anyio.create_memory_object_stream[str](100)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stdin_reader, send)
        code = await session_loop(args, recv)
        tg.cancel_scope.cancel()
    return code


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--timeout", type=float, default=30.0, help="per-request read timeout, seconds")
    args = p.parse_args()
    try:
        code = anyio.run(main_async, args)
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the stdin reader thread may still sit in readline(); don't wait for it


if __name__ == "__main__":
    main()
