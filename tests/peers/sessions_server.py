#!/usr/bin/env python3
"""MCP 2.3.0 backend with sessions for the gateway's real-peer tests (run under .venv-mcp2).

Usage: sessions_server.py --port P --name NAME

The same tools as stateless_server.py, served by MCPServer's default Streamable HTTP transport at
http://127.0.0.1:P/mcp: a legacy client gets a session (kept in this process's memory), and a
2026-07-28 request (by its MCP-Protocol-Version header) is served statelessly. --port 0 picks a
free port. Prints "READY <port>" on stdout (flushed) once uvicorn is accepting connections.
"""

from __future__ import annotations

import peer_serve
from peer_serve import HOST
from stateless_server import build_server

if __name__ == "__main__":
    peer_serve.main(__doc__, lambda name: build_server(name).streamable_http_app(host=HOST))
