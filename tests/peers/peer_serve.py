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
    a = p.parse_args()
    tls = (a.tls_cert, a.tls_key) if a.tls_cert else None
    try:
        anyio.run(serve, make_app(a.name), a.port, a.name, tls)
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
