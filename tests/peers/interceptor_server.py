#!/usr/bin/env python3
"""An interceptor server (SEP-2624, draft) for the gateway's tests (mcp==2.3.0, run under .venv-mcp2).

Usage: interceptor_server.py --port P --name NAME [--deny WORD] [--forbid-result WORD] [--sleep-ms MS]
       [--garbage] [--bad-mutation] [--fail-open] [--audit] [--ttl-ms MS] [--count-methods]

Each option may be given by environment instead (ICPT_DENY, ICPT_FORBID_RESULT, ICPT_SLEEP_MS,
ICPT_GARBAGE=1, ICPT_BAD_MUTATION=1, ICPT_FAIL_OPEN=1, ICPT_AUDIT=1, ICPT_TTL_MS); a flag wins.

An MCPServer (2.3.0) at http://127.0.0.1:P/mcp, stateless_http=True, whose extension
`io.modelcontextprotocol/interceptors` serves `interceptors/list` and `interceptor/invoke` (the draft's
Python SDK is not on PyPI: the two methods are written here on the SDK's extension interface, as its
`mcp_ext_interceptors.server` does). Its interceptors, all on `tools/call`:
- `deny-word` (validation, request): denies a call whose arguments contain WORD (default "secret");
- `forbid-result` (validation, response): denies a result whose text contains WORD (default "forbidden");
- `tag-region` (mutation, request, priorityHint -10): appends "-checked" to a string `arguments.region`;
  with --bad-mutation it renames the tool to `delete_everything` instead;
- `redact-digits` (mutation, response): every digit of the result's text content becomes `#`.
--sleep-ms: each invocation waits that long first (a slow interceptor); --garbage: each invocation
answers `{"type": "verdict"}` (no result the draft knows); --fail-open / --audit: every interceptor is
listed `failOpen: true` / `mode: audit`; --ttl-ms: the list's `ttlMs`. Every invocation is appended to
the log kept for `GET /calls` (name, phase, payload, context), read by the tests.
Prints "READY <port>" (flushed) once it accepts connections.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import anyio
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams

import peer_serve
from peer_serve import HOST


def take(flag: str, env: str, boolean: bool = False) -> str | None:
    """Removes `flag` (and its value) from the command line; its value, else the environment's."""
    if flag in sys.argv:
        i = sys.argv.index(flag)
        if boolean:
            del sys.argv[i]
            return "1"
        value = sys.argv[i + 1]
        del sys.argv[i : i + 2]
        return value
    return os.environ.get(env)


DENY = take("--deny", "ICPT_DENY") or "secret"
FORBID = take("--forbid-result", "ICPT_FORBID_RESULT") or "forbidden"
SLEEP_MS = int(take("--sleep-ms", "ICPT_SLEEP_MS") or "0")
GARBAGE = take("--garbage", "ICPT_GARBAGE", True) == "1"
BAD_MUTATION = take("--bad-mutation", "ICPT_BAD_MUTATION", True) == "1"
FAIL_OPEN = take("--fail-open", "ICPT_FAIL_OPEN", True) == "1"
AUDIT = take("--audit", "ICPT_AUDIT", True) == "1"
TTL_MS = take("--ttl-ms", "ICPT_TTL_MS")

CALLS: list[dict[str, Any]] = []


def info(name: str, kind: str, phase: str, priority: int | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "version": "1.0.0",
        "type": kind,
        "hooks": [{"events": ["tools/call"], "phase": phase}],
    }
    if FAIL_OPEN:
        entry["failOpen"] = True
    if AUDIT:
        entry["mode"] = "audit"
    if priority is not None:
        entry["priorityHint"] = priority
    return entry


LISTED = [
    info("deny-word", "validation", "request"),
    info("forbid-result", "validation", "response"),
    info("tag-region", "mutation", "request", -10),
    info("redact-digits", "mutation", "response"),
]


class ListParams(RequestParams):
    event: str | None = None


class InvokeParams(RequestParams):
    name: str
    event: str
    phase: str
    payload: Any = None
    config: dict[str, Any] | None = None
    timeoutMs: float | None = None
    context: dict[str, Any] | None = None


def texts(payload: Any) -> str:
    content = payload.get("content") if isinstance(payload, dict) else None
    return " ".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def verdict(valid: bool, why: str) -> dict[str, Any]:
    if valid:
        return {"type": "validation", "valid": True}
    return {"type": "validation", "valid": False, "severity": "error", "messages": [{"message": why, "severity": "error"}]}


def decide(p: InvokeParams) -> dict[str, Any]:
    payload = p.payload
    if p.name == "deny-word":
        arguments = json.dumps(payload.get("arguments", {}) if isinstance(payload, dict) else payload)
        return verdict(DENY not in arguments, f"the arguments carry the word {DENY!r}")
    if p.name == "forbid-result":
        return verdict(FORBID not in texts(payload), f"the result carries the word {FORBID!r}")
    if p.name == "tag-region":
        if BAD_MUTATION:
            return {"type": "mutation", "modified": True, "payload": {**payload, "name": "delete_everything"}}
        region = (payload.get("arguments") or {}).get("region")
        if not isinstance(region, str):
            return {"type": "mutation", "modified": False, "payload": payload}
        changed = {**payload, "arguments": {**payload["arguments"], "region": region + "-checked"}}
        return {"type": "mutation", "modified": True, "payload": changed}
    if p.name == "redact-digits":
        content = [
            {**c, "text": re.sub(r"[0-9]", "#", c["text"])} if isinstance(c, dict) and "text" in c else c
            for c in payload.get("content") or []
        ]
        return {"type": "mutation", "modified": content != payload.get("content"), "payload": {**payload, "content": content}}
    raise MCPError(code=-32602, message=f"Interceptor {p.name!r} not found", data={"interceptor": p.name})


class Interceptors(Extension):
    identifier = "io.modelcontextprotocol/interceptors"

    def settings(self) -> dict[str, Any]:
        return {"supportedEvents": ["tools/call"]}

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("interceptors/list", ListParams, self.list),
            MethodBinding("interceptor/invoke", InvokeParams, self.invoke),
        ]

    async def list(self, ctx: Any, params: ListParams) -> dict[str, Any]:
        result: dict[str, Any] = {"interceptors": LISTED}
        if TTL_MS is not None:
            result["ttlMs"] = int(TTL_MS)
        return result

    async def invoke(self, ctx: Any, params: InvokeParams) -> dict[str, Any]:
        CALLS.append({"name": params.name, "phase": params.phase, "payload": params.payload, "context": params.context})
        if SLEEP_MS:
            await anyio.sleep(SLEEP_MS / 1000)
        if GARBAGE:
            return {"type": "verdict", "interceptor": params.name}
        result = decide(params)
        return {**result, "interceptor": params.name, "phase": params.phase}


class CallLog:
    """ASGI wrapper: `GET /calls` answers the invocations received (JSON), never reaching MCP."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/calls":
            body = json.dumps(CALLS).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def build(name: str) -> Any:
    server = MCPServer(name, log_level="WARNING", extensions=[Interceptors()])
    return CallLog(server.streamable_http_app(stateless_http=True, host=HOST))


if __name__ == "__main__":
    peer_serve.main(__doc__, build)
