"""Serving an MCP Starlette app for the real-peer tests: bind 127.0.0.1 (port 0 picks a free
one), print "READY <port>" (flushed) once uvicorn accepts connections, exit quietly on SIGINT.

Shared by legacy_server.py (mcp 1.30.0) and stateless_server.py (mcp 2.3.0); needs only anyio
and uvicorn, which both SDKs bring.
"""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any, Callable

import anyio
import uvicorn

HOST = "127.0.0.1"  # loopback only, always


async def serve(app: Any, port: int, name: str, tls: tuple[str, str] | None = None) -> None:
    # IPPROTO_TCP, not the default 0: asyncio sets TCP_NODELAY only on sockets whose proto says
    # TCP. Without it Nagle holds each answer's body until the client ACKs the head: 40 ms per
    # call on kept-alive connections (measured with tcpdump).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        raise SystemExit(f"{name}: cannot bind {HOST}:{port}: {e}") from None
    actual_port = sock.getsockname()[1]
    # tls: (certificate, key) PEM files to serve https (the gateway's backend-TLS tests).
    ssl = {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]} if tls else {}
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", **ssl))
    done = anyio.Event()

    async def run() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not server.started:
            if done.is_set():
                raise SystemExit(f"{name}: uvicorn failed to start")
            await anyio.sleep(0.01)
        print(f"READY {actual_port}", flush=True)


def main(doc: str, make_app: Callable[[str], Any]) -> None:
    """Parses --port/--name, builds the app for that name and serves it until interrupted."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--tls-cert", help="serve https with this certificate (PEM)")
    p.add_argument("--tls-key", help="... and this key (PEM)")
    p.add_argument("--require-token", metavar="PEM", help="refuse (401) requests without a valid RS256 JWT bearer token")
    p.add_argument("--audience", help="... whose aud is this")
    p.add_argument("--scope", help="... whose scope holds this")
    p.add_argument(
        "--latency-ms",
        type=int,
        default=0,
        help="every HTTP request waits this long before it is handled (a backend far away; benchmarks)",
    )
    p.add_argument(
        "--count-methods",
        action="store_true",
        help="count the POSTs received by JSON-RPC method; GET /bench/counts answers them (benchmarks)",
    )
    a = p.parse_args()
    tls = (a.tls_cert, a.tls_key) if a.tls_cert else None
    app = make_app(a.name)
    if a.require_token:
        app = BearerGuard(app, a.require_token, a.audience, a.scope)
    if a.latency_ms or a.count_methods:
        app = BenchShim(app, a.latency_ms, a.count_methods)
    try:
        anyio.run(serve, app, a.port, a.name, tls)
    except KeyboardInterrupt:
        pass
    sys.exit(0)


def header_digests(request: Any, name: str) -> str:
    """The SHA-256 (hex) of every value of header `name` of a Starlette `request`, joined by
    " | " ("none" when absent): what the `header_digest` tools answer (digests, not values, so a
    secret a backend received appears in no answer)."""
    import hashlib

    values = request.headers.getlist(name) if request is not None else []
    digests = [hashlib.sha256(v.encode()).hexdigest() for v in values]
    return " | ".join(digests) if digests else "none"


class BearerGuard:
    """ASGI middleware of a backend that checks the token it receives (issue 35's tests): an
    `Authorization: Bearer` RS256 JWT signed by the key in `key_pem`, with `audience` in its
    `aud` and `scope` among its scopes, issued after the last `POST /guard/reject-older`; any
    other request gets 401 with `WWW-Authenticate: Bearer error="invalid_token"`.
    `GET /guard/stats` answers {"accepted": n, "refused": n, "subjects": [...]} (no token)."""

    def __init__(self, app: Any, key_pem: str, audience: str | None, scope: str | None) -> None:
        with open(key_pem, encoding="utf-8") as f:
            self.key = f.read()
        self.app, self.audience, self.scope = app, audience, scope
        self.not_before = 0.0
        self.stats: dict[str, Any] = {"accepted": 0, "refused": 0, "subjects": []}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        import json
        import time

        path, method = scope["path"], scope["method"]
        if path == "/guard/reject-older" and method == "POST":
            self.not_before = time.time()
            return await _answer(send, 200, b"{}")
        if path == "/guard/stats":
            return await _answer(send, 200, json.dumps(self.stats).encode())
        headers = dict(scope["headers"])
        claims = self.verified(headers.get(b"authorization", b"").decode("latin-1"))
        if claims is None:
            self.stats["refused"] += 1
            www = (b"www-authenticate", b'Bearer error="invalid_token"')
            return await _answer(send, 401, b'{"error":"invalid_token"}', [www])
        self.stats["accepted"] += 1
        self.stats["subjects"].append(claims.get("sub"))
        return await self.app(scope, receive, send)

    def verified(self, authorization: str) -> dict[str, Any] | None:
        import jwt

        kind, _, token = authorization.partition(" ")
        if kind.lower() != "bearer" or not token:
            return None
        try:
            claims = jwt.decode(
                token,
                self.key,
                algorithms=["RS256"],
                audience=self.audience,
                options={"verify_aud": self.audience is not None},
                leeway=0,
            )
        except jwt.PyJWTError:
            return None
        if self.scope and self.scope not in str(claims.get("scope", "")).split():
            return None
        if claims.get("iat", 0) < int(self.not_before):
            return None
        return claims


class BenchShim:
    """ASGI middleware for the benchmarks (scripts/bench-cache): every HTTP request waits
    `latency_ms` before the app sees it (the backend's own time, as if it ran elsewhere: a wait,
    not work on this box's cores); with `count`, each POST is counted by its JSON-RPC `method`
    (a batch by each of its messages) as it arrives, and `GET /bench/counts` answers
    {"METHOD": n, ...} (no latency, never passed to the app)."""

    def __init__(self, app: Any, latency_ms: int, count: bool) -> None:
        self.app, self.latency, self.count = app, latency_ms / 1000, count
        self.counts: dict[str, int] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        import json

        if self.count and scope["path"] == "/bench/counts":
            return await _answer(send, 200, json.dumps(self.counts).encode())
        if self.count and scope["method"] == "POST":
            body, more = b"", True
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    break
                body += message.get("body", b"")
                more = message.get("more_body", False)
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            for msg in parsed if isinstance(parsed, list) else [parsed]:
                method = msg.get("method", "(answer)") if isinstance(msg, dict) else "(not JSON-RPC)"
                self.counts[method] = self.counts.get(method, 0) + 1
            receive = _replaying(body, receive)
        if self.latency:
            await anyio.sleep(self.latency)
        return await self.app(scope, receive, send)


def _replaying(body: bytes, receive: Any) -> Any:
    """An ASGI `receive` that gives `body` (already read) first, then what `receive` gives."""
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _answer(send: Any, status: int, body: bytes, extra: list | None = None) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def token_claims(request: Any) -> str:
    """The claims of the bearer JWT of a Starlette `request` (not verified here: BearerGuard did),
    as JSON: what the `token_claims` tools answer ("none" without one)."""
    import json

    import jwt

    value = request.headers.get("authorization", "") if request is not None else ""
    kind, _, token = value.partition(" ")
    if kind.lower() != "bearer" or not token:
        return "none"
    claims = jwt.decode(token, options={"verify_signature": False})
    return json.dumps({k: claims.get(k) for k in ("sub", "aud", "scope", "client_id", "act", "iat")})
