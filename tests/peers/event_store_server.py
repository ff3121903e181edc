#!/usr/bin/env python3
"""Stateful (2025-11-25) MCP backend WITH an event store (mcp==1.30.0, run under .venv-mcp1).

Usage: event_store_server.py --port P --name NAME

FastMCP 1.30.0 with a minimal in-memory EventStore and retry_interval=300 ms, so the server itself sends
priming events, gives its events ids, can close a call's SSE stream midway (ctx.close_sse_stream()) and
replays after Last-Event-ID. Tool `progress_then_close(steps, delay_ms)`: `steps` progress notifications
`delay_ms` apart, closing the POST stream after the second, then "done". The gateway must resume such an
answer upstream with the backend's own event id and keep the backend's ids from the client. Prints
"READY <port>" on stdout once accepting connections.
"""

from __future__ import annotations

import itertools

import anyio

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

import peer_serve
from peer_serve import HOST


class MemoryEventStore(EventStore):
    """Every event of every stream, in order; ids are `backend-<n>` (global counter)."""

    def __init__(self) -> None:
        self.events: list[tuple[EventId, StreamId, JSONRPCMessage | None]] = []
        self.ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"backend-{next(self.ids)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        position = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if position is None:
            return None
        stream_id = self.events[position][1]
        for event_id, stream, message in self.events[position + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def build_server(name: str) -> FastMCP:
    mcp = FastMCP(name, host=HOST, log_level="WARNING", event_store=MemoryEventStore(), retry_interval=300)

    @mcp.tool()
    async def progress_then_close(ctx: Context, steps: int = 4, delay_ms: int = 200) -> str:
        """`steps` progress notifications; the POST stream is closed after the second."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}/{steps}")
            if i == 1:
                await ctx.close_sse_stream()
            await anyio.sleep(delay_ms / 1000)
        return "done"

    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build_server(name).streamable_http_app())
