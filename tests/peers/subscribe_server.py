#!/usr/bin/env python3
"""FastMCP 1.30.0 (stateful, sessions) backend for the reverse era bridge's `subscriptions/listen` test (issue 23),
run under .venv-mcp1: the tools of pooled_server.py plus a subscribable resource.

Usage: subscribe_server.py --port P --name NAME

Extra over pooled_server.py:
  resource note://counter   -> the counter, as text
  resources/subscribe       -> notes the subscribing session for the URI (FastMCP 1.x has no public hook: the
                               low-level handler); resources/unsubscribe forgets it
  tool bump()               -> counter + 1, then notifications/resources/updated for note://counter and
                               notifications/tools/list_changed to every subscribed session (on its GET stream,
                               the legacy way); returns the new value
  tool subscribers()        -> how many sessions are subscribed now
The server declares tools.listChanged (FastMCP 1.x declares false by default) and resources.subscribe.
Prints "READY <port>" once serving (peer_serve).
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import Context

import peer_serve
from pooled_server import build as build_pooled


def build(name: str):
    mcp = build_pooled(name)
    lowlevel = mcp._mcp_server  # noqa: SLF001 - FastMCP 1.x has no public subscribe hook
    counter = {"n": 0}
    subscribed: dict[str, set[Any]] = {}

    @mcp.resource("note://counter")
    def count_resource() -> str:
        return str(counter["n"])

    @lowlevel.subscribe_resource()
    async def subscribe(uri) -> None:
        subscribed.setdefault(str(uri), set()).add(lowlevel.request_context.session)

    @lowlevel.unsubscribe_resource()
    async def unsubscribe(uri) -> None:
        subscribed.get(str(uri), set()).discard(lowlevel.request_context.session)

    @mcp.tool()
    async def bump(ctx: Context) -> str:
        """Increment the counter and notify the subscribers."""
        counter["n"] += 1
        uri = "note://counter"
        for session in list(subscribed.get(uri, set())):
            try:
                await session.send_resource_updated(uri)
                await session.send_tool_list_changed()
            except Exception:  # a closed session
                subscribed[uri].discard(session)
        return str(counter["n"])

    @mcp.tool()
    def subscribers() -> str:
        """How many sessions are subscribed."""
        return str(sum(len(s) for s in subscribed.values()))

    original = lowlevel.get_capabilities

    def capabilities(notification_options, experimental_capabilities):
        caps = original(notification_options, experimental_capabilities)
        if caps.tools is not None:
            caps.tools.listChanged = True
        if caps.resources is not None:
            caps.resources.subscribe = True
        return caps

    lowlevel.get_capabilities = capabilities
    return mcp


if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build(name).streamable_http_app())
