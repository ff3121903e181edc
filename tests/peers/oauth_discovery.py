#!/usr/bin/env python3
"""OAuth discovery against a protected MCP endpoint with the mcp 2.3.0 SDK's own helpers.

Usage: oauth_discovery.py --url URL

POSTs a `tools/list` without a token, reads the 401's WWW-Authenticate with
`extract_resource_metadata_from_www_auth`, walks the SDK's discovery URL order
(`build_protected_resource_metadata_discovery_urls`), parses the first document that answers with
`handle_protected_resource_response` (RFC 9728 `ProtectedResourceMetadata`) and checks the
resource against the server URL (`check_resource_allowed`). Prints one JSON line:
{"status": 401, "www_authenticate": "...", "metadata_url": "...", "resource": "...",
 "authorization_servers": [...], "scopes_supported": [...], "resource_allowed": bool}
"""

from __future__ import annotations

import argparse
import json

import anyio
import httpx2
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url


async def main(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with httpx2.AsyncClient() as http:
        first = await http.post(url, json=body, headers=headers)
        out: dict = {"status": first.status_code, "www_authenticate": first.headers.get("www-authenticate")}
        hinted = extract_resource_metadata_from_www_auth(first)
        for candidate in build_protected_resource_metadata_discovery_urls(hinted, url):
            meta = await handle_protected_resource_response(await http.get(candidate))
            if meta is not None:
                out["metadata_url"] = candidate
                out["resource"] = str(meta.resource)
                out["authorization_servers"] = [str(s) for s in meta.authorization_servers]
                out["scopes_supported"] = meta.scopes_supported
                out["resource_allowed"] = check_resource_allowed(
                    requested_resource=resource_url_from_server_url(url), configured_resource=str(meta.resource)
                )
                break
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    anyio.run(main, p.parse_args().url)
