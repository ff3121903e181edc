"""A legacy (PyPI mcp 1.30.0) client for the era-bridge tests (issue 22): one scenario per run,
one JSON object on the last stdout line. Run with .venv-mcp1/bin/python.

    bridge_client_v1.py --url URL SCENARIO [ARG]

Scenarios:
  tour            initialize, tools/list, progress (callback), resources read + templates, prompt,
                  logging/setLevel warning + the `log` tool (logging callback), ping; then exit
                  (DELETE). Prints what each step saw.
  ask ROUNDS      elicitation callback answering "A<n>"; calls `ask {rounds}`.
  ask-nocap       no elicitation callback (so no capability); calls `ask`, reports the error.
  sample          sampling callback answering "sampled text"; calls `sample`.
  roots           list_roots callback with file:///a and file:///b; calls `roots`.
  roots-nocap     no roots callback; calls `roots`, reports the error.
  endless         elicitation callback; calls `endless`, reports the error.
  progress-rounds elicitation + progress callbacks; calls `progress_ask` (progress in two rounds).
  state-echo      calls `state_echo` (a requestState-only round the gateway retries itself).
  connect         initialize only (to show a direct connection to a modern-only server fails).
  whoami          initialize, then `whoami` three times: which servers answered (the demo).
  subscribe       resources/subscribe text://item/3, `touch` item/3 and item/4 (the server's
                  notifications/resources/updated), `change_tools` (tools/list_changed), then
                  unsubscribe and `touch` item/3 again: which notifications the GET stream brought.
Errors: {"error": "<Type>: <message>", "code": C, "data": D} (exit 0 for *-nocap and endless,
1 otherwise).
"""

import argparse
import asyncio
import json
import sys
import time

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError
from pydantic import AnyUrl


def out(obj, code=0):
    print(json.dumps(obj), flush=True)
    sys.exit(code)


async def run(url, scenario, arg):
    calls = {"elicit": 0, "sample": 0, "roots": 0}
    logs = []

    async def elicit(ctx, params):
        calls["elicit"] += 1
        return types.ElicitResult(action="accept", content={"answer": f"A{calls['elicit']}"})

    async def sample(ctx, params):
        calls["sample"] += 1
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled text"), model="fixed"
        )

    async def roots(ctx):
        calls["roots"] += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///a"), types.Root(uri="file:///b")])

    async def log(params):
        logs.append(params.level)

    kwargs = {"logging_callback": log}
    updated, tools_changed = [], []

    async def on_message(message):
        root = getattr(message, "root", None)
        if isinstance(root, types.ResourceUpdatedNotification):
            updated.append(str(root.params.uri))
        elif isinstance(root, types.ToolListChangedNotification):
            tools_changed.append(True)

    async def until(check, seconds):
        deadline = time.monotonic() + seconds
        while not check() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    if scenario == "subscribe":
        kwargs["message_handler"] = on_message
    if scenario in ("ask", "endless", "tour", "progress-rounds"):
        kwargs["elicitation_callback"] = elicit
    if scenario == "sample":
        kwargs["sampling_callback"] = sample
    if scenario == "roots":
        kwargs["list_roots_callback"] = roots

    async with streamablehttp_client(url, timeout=20) as (r, w, get_sid):
        async with ClientSession(r, w, read_timeout_seconds=None, **kwargs) as s:
            init = await s.initialize()
            res = {"protocol": init.protocolVersion, "server": init.serverInfo.name,
                   "instructions": init.instructions, "session": bool(get_sid())}
            if scenario == "connect":
                return res
            if scenario == "whoami":
                res["whoami"] = [(await s.call_tool("whoami", {})).content[0].text for _ in range(3)]
                return res
            if scenario == "tour":
                res["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
                progress = []

                async def on_progress(p, total, message):
                    progress.append(p)

                r1 = await s.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
                res["progress"] = progress
                res["progress_text"] = r1.content[0].text
                res["whoami"] = (await s.call_tool("whoami", {})).content[0].text
                read = await s.read_resource("text://item/7")
                res["read"] = read.contents[0].text
                res["prompt"] = (await s.get_prompt("greet", {"name": "Zoe"})).messages[0].content.text
                logs.clear()
                await s.set_logging_level("warning")
                res["log_text"] = (await s.call_tool("log", {})).content[0].text
                await asyncio.sleep(0.2)
                res["logs"] = list(logs)
                res["ping"] = (await s.send_ping()) is not None
                try:
                    templates = await s.list_resource_templates()
                    res["templates"] = [t.uriTemplate for t in templates.resourceTemplates]
                except McpError as e:
                    res["templates_error"] = e.error.code
                return res
            if scenario == "progress-rounds":
                progress = []

                async def on_progress(p, total, message):
                    progress.append([p, total])

                result = await s.call_tool("progress_ask", {}, progress_callback=on_progress)
                res.update(text=result.content[0].text, progress=progress, calls=calls)
                return res
            if scenario == "subscribe":
                await asyncio.sleep(0.5)  # the client opens its GET stream after initialized
                await s.subscribe_resource(AnyUrl("text://item/3"))
                await s.call_tool("touch", {"uri": "text://item/3"})
                await s.call_tool("touch", {"uri": "text://item/4"})
                await until(lambda: updated, 5)
                await asyncio.sleep(0.3)
                res["updated"] = list(updated)
                await s.call_tool("change_tools", {})
                await until(lambda: tools_changed, 5)
                res["tools_changed"] = len(tools_changed)
                await s.unsubscribe_resource(AnyUrl("text://item/3"))
                await s.call_tool("touch", {"uri": "text://item/3"})
                await asyncio.sleep(0.5)
                res["after_unsubscribe"] = list(updated)
                return res
            if scenario == "state-echo":
                res["text"] = (await s.call_tool("state_echo", {})).content[0].text
                return res
            tool, args = {
                "ask": ("ask", {"rounds": int(arg or 2)}),
                "ask-nocap": ("ask", {}),
                "sample": ("sample", {}),
                "roots": ("roots", {}),
                "roots-nocap": ("roots", {}),
                "endless": ("endless", {}),
            }[scenario]
            started = time.monotonic()
            result = await s.call_tool(tool, args)
            res.update(text=result.content[0].text if result.content else None, isError=result.isError,
                       calls=calls, seconds=time.monotonic() - started)
            return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("scenario")
    ap.add_argument("arg", nargs="?")
    a = ap.parse_args()
    try:
        res = asyncio.run(run(a.url, a.scenario, a.arg))
    except BaseException as e:  # noqa: BLE001 - report whatever the SDK raised
        err = e
        while isinstance(err, BaseExceptionGroup) and err.exceptions:
            err = err.exceptions[0]
        obj = {"error": f"{type(err).__name__}: {err}"}
        if isinstance(err, McpError):
            obj.update(code=err.error.code, data=err.error.data)
        expected = a.scenario in ("ask-nocap", "roots-nocap", "endless") and isinstance(err, McpError)
        out(obj, 0 if expected else 1)
    out(res, 1 if a.scenario in ("ask-nocap", "roots-nocap", "endless") else 0)


if __name__ == "__main__":
    main()
