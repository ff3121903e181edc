#!/usr/bin/env python3
"""Stateful (2025-11-25) MCP backend with the experimental Tasks of mcp 1.30.0 (SEP-1686), run under .venv-mcp1.

Usage: tasks_v1_server.py --port P --name NAME

FastMCP 1.30.0 in its default stateful mode at http://127.0.0.1:P/mcp (server-minted Mcp-Session-Id, SSE
answers, loopback DNS-rebinding guard), exactly as legacy_server.py, plus the low-level server's
`experimental.enable_tasks()`: the SDK's InMemoryTaskStore + its default tasks/get, tasks/result, tasks/list
and tasks/cancel handlers, and the `tasks` capability ({list, cancel, requests.tools.call}). FastMCP 1.x has
no task hook, so tools/list and tools/call are the low-level handlers (FastMCP's tool manager still does the
plain calls and the input schemas).

Tools (`execution.taskSupport` in tools/list):
  whoami()              (none = forbidden)  -> NAME
  slow_task(ms=300)     optional            -> "NAME:done" after ms (a task when the call has a `task` field,
                                               a plain call otherwise)
  long_task(ms=600000)  required            -> "NAME:done" after ms; a plain call answers an isError result
A task's work polls the store every 50 ms and stops once the task is cancelled (tasks/cancel) or gone (its
TTL ran out): the SDK itself never stops the work of a cancelled task.

Task state lives in this process only. Task ids are "<session scope>:<uuid4>" (the SDK embeds a per-session
scope); the default handlers answer -32602 "Task not found: <id>" for another session's task as for an
unknown one, so a task created through one MCP session is reachable only from that session on this process.
Prints "READY <port>" on stdout (flushed) once serving; logs go to stderr; SIGTERM exits at once.
"""

from __future__ import annotations

import warnings
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import anyio

from mcp import types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.experimental.task_support import TaskSupport
from mcp.server.fastmcp import FastMCP

import peer_serve
from peer_serve import HOST

# Server.experimental is deprecated in 1.30.0 ("tasks (SEP-1686) were removed from the MCP specification");
# that is the API this peer exists to exercise.
warnings.filterwarnings("ignore", category=DeprecationWarning)

# tool -> (execution.taskSupport, default ms); whoami has no `execution` (forbidden).
TASK_TOOLS: dict[str, tuple[str, int]] = {"slow_task": ("optional", 300), "long_task": ("required", 600_000)}
POLL_S = 0.05


@asynccontextmanager
async def _per_session_noop() -> AsyncIterator[None]:
    yield


def build_server(name: str) -> tuple[FastMCP, TaskSupport]:
    mcp = FastMCP(name, host=HOST, log_level="WARNING")
    lowlevel = mcp._mcp_server  # noqa: SLF001 - FastMCP 1.x has no public hook for tasks
    support = lowlevel.experimental.enable_tasks()
    store = support.store
    # SDK 1.30.0 bug worked around here: Server.run() enters `support.run()` once PER SESSION, and that
    # context manager keeps ONE task-group slot on the shared TaskSupport: each new session overwrites it and
    # each ending session (a DELETE, or the throwaway session of a POST without Mcp-Session-Id) sets it to
    # None, after which every session's task-augmented tools/call answers the isError result "TaskSupport not
    # running. Ensure Server.run() is active." until another session starts. So the per-session entry is a
    # no-op and build_app() runs one task group for the whole process (task work outlives its session).
    support.run = _per_session_noop  # type: ignore[method-assign]

    @mcp.tool(structured_output=False)
    def whoami() -> str:
        """Return this backend's name."""
        return name

    @mcp.tool(structured_output=False)
    async def slow_task(ms: int = 300) -> str:
        """Wait ms milliseconds, then return "NAME:done" (task support: optional)."""
        await anyio.sleep(ms / 1000)
        return f"{name}:done"

    @mcp.tool(structured_output=False)
    async def long_task(ms: int = 600_000) -> str:
        """A task that stays `working` for ms milliseconds (task support: required)."""
        await anyio.sleep(ms / 1000)
        return f"{name}:done"

    async def work_for(task: ServerTaskContext, ms: int) -> types.CallToolResult:
        deadline = anyio.current_time() + ms / 1000
        while (left := deadline - anyio.current_time()) > 0:
            await anyio.sleep(min(POLL_S, left))
            current = await store.get_task(task.task_id)
            if current is None or current.status == types.TASK_STATUS_CANCELLED:
                # Cancelled (or expired). run_task's wrapper would call complete() on a task whose *local*
                # copy is still "working"; the store refuses to leave a terminal state (ValueError), and so does
                # the wrapper's fallback fail(), whose ValueError escapes into the task group and ends it (tried
                # without this guard: the session manager goes down with it, every later request answers HTTP
                # 500). Marking the local copy terminal makes the wrapper leave the task alone.
                task._ctx._task = current or task.task.model_copy(update={"status": types.TASK_STATUS_CANCELLED})  # noqa: SLF001
                return types.CallToolResult(content=[])
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{name}:done")])

    @lowlevel.list_tools()
    async def list_tools() -> list[types.Tool]:
        tools = await mcp.list_tools()
        for tool in tools:
            if tool.name in TASK_TOOLS:
                tool.execution = types.ToolExecution(taskSupport=TASK_TOOLS[tool.name][0])
        return tools

    @lowlevel.call_tool(validate_input=False)
    async def call_tool(tool: str, arguments: dict[str, Any]) -> Any:
        ctx = lowlevel.request_context
        mode = TASK_TOOLS.get(tool, (None, 0))[0]
        # The SDK's check (-32601 "This tool requires / does not support task-augmented invocation"); raised
        # inside the call_tool handler it becomes an isError CallToolResult, as in the SDK's own examples.
        ctx.experimental.validate_task_mode(mode)
        if ctx.experimental.is_task:
            ms = int(arguments.get("ms", TASK_TOOLS[tool][1]))
            return await ctx.experimental.run_task(lambda task: work_for(task, ms))
        return await mcp.call_tool(tool, arguments)

    return mcp, support


def build_app(name: str) -> Any:
    mcp, support = build_server(name)
    app = mcp.streamable_http_app()
    session_manager_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[None]:
        async with TaskSupport.run(support):  # the process-wide task group (see build_server)
            try:
                async with session_manager_lifespan(a):
                    yield
            finally:
                support.task_group.cancel_scope.cancel()  # don't wait for a long_task at shutdown

    app.router.lifespan_context = lifespan
    return app


if __name__ == "__main__":
    peer_serve.main(__doc__, build_app)
