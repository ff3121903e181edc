#!/usr/bin/env node
// Long-lived MCP client driven by JSON lines on stdin: the TypeScript SDK's Client
// (@modelcontextprotocol/sdk, pinned in package.json) over StreamableHTTPClientTransport.
// Same protocol as ../repl_client.py, so the Rust harness drives every SDK the same way.
//
// Usage: node tests/peers/node/repl_client.mjs --url URL [--timeout SECS]
//
// On start: connects (initialize + notifications/initialized) and prints
//   {"ready": true, "protocol": "<negotiated>", "sdk": "ts-<version>"}
// or {"ready": false, "error": "...", "code": int|null, "message": M, "data": D} and exits 1.
// Then one JSON answer line per command line:
//   {"op":"call","name":N,"args":{...}}  -> {"ok":true,"text":"...","isError":false}
//   {"op":"list"}                         -> {"ok":true,"tools":[sorted names]}
//   {"op":"set_level","level":"debug"}    -> {"ok":true}
//   {"op":"progress","name":TOOL,"args":{...}}   (default: slow_progress {steps,delay_ms})
//                                         -> {"ok":true,"progress_times":[...],"result_time":t,"text":...,"isError":...}
//   {"op":"ping"}                         -> {"ok":true}
//   {"op":"session_id"}                   -> {"ok":true,"session_id":"..."|null}
//   {"op":"fresh_calls","name":N,"sessions":K}
//                                         -> {"ok":true,"texts":[...],"isError":[...],"protocols":[...],"ms":[...]}
//                                            K new sessions one after another, each a Client advertising
//                                            elicitation + sampling (handlers: accept {answer: "42"} / text
//                                            "hello from the client") that calls tool N (no arguments) as soon as
//                                            connect() returns, then terminateSession (DELETE) + close: issue 17's
//                                            race. The command's own session is not used. The first failure
//                                            answers the error fields plus "session": i.
//   {"op":"close"}  (or EOF)              -> {"ok":true} after DELETE (terminateSession) and close; exit 0
// A failing command answers {"ok":false,"error_type":T,"code":int|null,"message":M,"data":D}.

import { createRequire } from "node:module";
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { callbackClient } from "./callback_client.mjs";

const SDK = "ts-" + createRequire(import.meta.url)("@modelcontextprotocol/sdk/package.json").version;

function parseArgs(argv) {
  const out = { url: null, timeout: 30 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--url") out.url = argv[++i];
    else if (argv[i] === "--timeout") out.timeout = Number(argv[++i]);
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!out.url) throw new Error("--url is required");
  return out;
}

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

function errorFields(e) {
  if (e instanceof McpError) {
    // McpError prefixes its message with "MCP error <code>: "; report the server's own text.
    const message = e.message.replace(/^MCP error -?\d+: /, "");
    return { ok: false, error_type: "McpError", code: e.code, message, data: e.data ?? null };
  }
  return { ok: false, error_type: e?.constructor?.name ?? "Error", code: null, message: String(e?.message ?? e), data: null };
}

const textOf = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

// A new session whose client answers elicitation and sampling, calling `name` at once; closed after.
async function freshCall(url, name, timeoutMs) {
  const client = callbackClient("mcp-gateway-repl-ts");
  const transport = new StreamableHTTPClientTransport(new URL(url));
  try {
    await client.connect(transport, { timeout: timeoutMs });
    // No pause here: this is the race.
    const res = await client.callTool({ name, arguments: {} }, undefined, { timeout: timeoutMs });
    return { text: textOf(res), isError: Boolean(res.isError), protocol: transport.protocolVersion ?? null };
  } finally {
    if (transport.sessionId) await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

async function run(client, transport, cmd, timeoutMs, url) {
  const opts = { timeout: timeoutMs };
  switch (cmd.op) {
    case "call": {
      const res = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} }, undefined, opts);
      return { ok: true, text: textOf(res), isError: Boolean(res.isError) };
    }
    case "list": {
      const res = await client.listTools(undefined, opts);
      return { ok: true, tools: res.tools.map((t) => t.name).sort() };
    }
    case "set_level":
      await client.setLoggingLevel(cmd.level, opts);
      return { ok: true };
    case "ping":
      await client.ping(opts);
      return { ok: true };
    case "progress": {
      const times = [];
      const t0 = performance.now();
      const name = cmd.name ?? "slow_progress";
      const args = cmd.name ? (cmd.args ?? {}) : { steps: cmd.steps ?? 3, delay_ms: cmd.delay_ms ?? 300 };
      const onprogress = () => times.push(Number(((performance.now() - t0) / 1000).toFixed(4)));
      const res = await client.callTool({ name, arguments: args }, undefined, { ...opts, onprogress });
      return {
        ok: true,
        progress_times: times,
        result_time: Number(((performance.now() - t0) / 1000).toFixed(4)),
        text: textOf(res),
        isError: Boolean(res.isError),
      };
    }
    case "session_id":
      return { ok: true, session_id: transport.sessionId ?? null };
    case "fresh_calls": {
      const out = { ok: true, texts: [], isError: [], protocols: [], ms: [] };
      for (let i = 0; i < (cmd.sessions ?? 1); i++) {
        const t0 = performance.now();
        let got;
        try {
          got = await freshCall(url, cmd.name, timeoutMs);
        } catch (e) {
          return { ...errorFields(e), session: i };
        }
        out.texts.push(got.text);
        out.isError.push(got.isError);
        out.protocols.push(got.protocol);
        out.ms.push(Math.round(performance.now() - t0));
      }
      return out;
    }
    default:
      return { ok: false, error_type: "BadCommand", code: null, message: `unknown op ${JSON.stringify(cmd.op)}`, data: null };
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const timeoutMs = args.timeout * 1000;
  // MCPGW_BEARER: a bearer token sent on every request (the gateway's auth tests).
  const bearer = process.env.MCPGW_BEARER;
  const transport = new StreamableHTTPClientTransport(
    new URL(args.url),
    bearer ? { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } } : undefined,
  );
  const client = new Client({ name: "mcp-gateway-repl-ts", version: "1.0.0" }, { capabilities: {} });
  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (e) {
    emit({ ready: false, error: `${e?.constructor?.name}: ${e?.message}`, ...errorFields(e) });
    process.exit(1);
  }
  emit({ ready: true, protocol: transport.protocolVersion ?? null, sdk: SDK });

  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let cmd;
    try {
      cmd = JSON.parse(line);
      if (typeof cmd !== "object" || cmd === null || Array.isArray(cmd)) throw new Error("command must be a JSON object");
    } catch (e) {
      emit({ ok: false, error_type: "BadCommand", code: null, message: String(e.message), data: null });
      continue;
    }
    if (cmd.op === "close") break;
    try {
      emit(await run(client, transport, cmd, timeoutMs, args.url));
    } catch (e) {
      emit(errorFields(e));
    }
  }
  let code = 0;
  try {
    if (transport.sessionId) await transport.terminateSession();
    await client.close();
    emit({ ok: true });
  } catch (e) {
    emit(errorFields(e));
    code = 1;
  }
  process.exit(code);
}

main().catch((e) => {
  emit({ ready: false, error: String(e?.stack ?? e), code: null, message: String(e), data: null });
  process.exit(1);
});
