"""A legacy (PyPI mcp 1.30.0) client for the Mcp-Param tests: it sends no `Mcp-Param-*` header
of its own (2025-11-25 has none), so what a 2026-07-28 server gets is what the gateway mirrors.
One JSON object on the last stdout line. Run with .venv-mcp1/bin/python.

    param_client_v1.py --url URL call TOOL ARGS_JSON   list the tools, call TOOL with ARGS_JSON:
                                                       {"tools": [...], "text": ..., "isError": ...}
    param_client_v1.py --url URL conformance           a `conformance client` scenario: the one
        MCP_CONFORMANCE_SCENARIO names, with MCP_CONFORMANCE_CONTEXT's tool calls
        (http-custom-headers) or every tool, resource and prompt listed (http-standard-headers).
        The suite passes its mock server's URL as the last argument; the gateway in front of it
        is --url (MCPGW_CONFORMANCE_URL when --url is not given).
Errors: {"error": "<Type>: <message>", "code": C} and exit 1.
"""

import argparse
import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


def out(obj, code=0):
    print(json.dumps(obj), flush=True)
    sys.exit(code)


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def call(session, tool, args):
    tools = await session.list_tools()
    result = await session.call_tool(tool, json.loads(args))
    return {"tools": [t.name for t in tools.tools], "text": text_of(result), "isError": result.isError}


async def conformance(session):
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    seen = {"scenario": scenario, "calls": []}
    tools = await session.list_tools()
    if scenario == "http-custom-headers":
        for c in context.get("toolCalls", []):
            result = await session.call_tool(c["name"], c.get("arguments") or {})
            seen["calls"].append({"name": c["name"], "isError": result.isError, "text": text_of(result)})
        return seen
    for t in tools.tools:
        result = await session.call_tool(t.name, {})
        seen["calls"].append({"name": t.name, "isError": result.isError})
    for r in (await session.list_resources()).resources:
        await session.read_resource(r.uri)
        seen["calls"].append({"uri": str(r.uri)})
    for p in (await session.list_prompts()).prompts:
        await session.get_prompt(p.name)
        seen["calls"].append({"prompt": p.name})
    return seen


async def run(url, scenario, rest):
    async with streamablehttp_client(url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            if scenario == "call":
                return await call(session, rest[0], rest[1])
            if scenario == "conformance":
                return await conformance(session)
            raise SystemExit(f"unknown scenario {scenario}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", default=os.environ.get("MCPGW_CONFORMANCE_URL"))
    p.add_argument("scenario")
    p.add_argument("rest", nargs="*")
    a = p.parse_args()
    try:
        out(asyncio.run(run(a.url, a.scenario, a.rest)))
    except McpError as e:
        out({"error": f"McpError: {e.error.message}", "code": e.error.code}, 1)
    except Exception as e:  # noqa: BLE001 - the verdict names whatever broke
        cause = e
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
            cause = cause.exceptions[0]
        code = getattr(getattr(cause, "error", None), "code", None)
        out({"error": f"{type(cause).__name__}: {cause}", "code": code}, 1)


if __name__ == "__main__":
    main()
