#!/usr/bin/env node
// Issue 17's client side: the TypeScript SDK Client (@modelcontextprotocol/sdk, pinned in
// package.json) calls a tool that sends a server-initiated request IMMEDIATELY after
// `client.connect()`, exactly as the conformance suite's scenarios do. The SDK's transport fires
// its GET SSE stream right after the 202 to `notifications/initialized` without awaiting it, then
// POSTs the tools/call on another connection: if the server sees the call before the GET, an
// unrelated server request (see elicit_server.mjs) is dropped and the call stalls.
//
// Usage: node tests/peers/node/elicit_race_client.mjs --url URL --runs N --timeout-ms T [--tool ask|sample]
//
// Each run: a new Client (capabilities elicitation + sampling; handlers answer at once: accept
// {answer: "42"} / a fixed text message) over a new StreamableHTTPClientTransport, connect, call
// the tool, then terminateSession (DELETE) and close. A run is a stall when connect or the call
// fails or the whole run takes more than T ms (the call itself is bounded by T as well).
// Prints one JSON line: {"runs":N,"stalls":K,"failures":[first 5 messages],"ms":[per-run ms]}.
// Exit 0 whenever it could run (stalls are data, not errors); bad arguments -> exit 2.

import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { callbackClient } from "./callback_client.mjs";

function usage(msg) {
  process.stderr.write(
    `elicit_race_client.mjs: ${msg}\nusage: node elicit_race_client.mjs --url URL --runs N --timeout-ms T [--tool ask|sample]\n`,
  );
  process.exit(2);
}

function parseArgs(argv) {
  const out = { url: null, runs: 50, timeout: 2000, tool: "ask" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === "--url") out.url = val();
    else if (a === "--runs") out.runs = Number(val());
    else if (a === "--timeout-ms") out.timeout = Number(val());
    else if (a === "--tool") out.tool = val();
    else usage(`unknown argument ${a}`);
  }
  if (!out.url) usage("--url is required");
  if (!Number.isInteger(out.runs) || out.runs < 1) usage("--runs must be a positive integer");
  if (!Number.isFinite(out.timeout) || out.timeout <= 0) usage("--timeout-ms must be positive");
  if (!["ask", "sample"].includes(out.tool)) usage("--tool must be ask or sample");
  return out;
}

const args = parseArgs(process.argv.slice(2));
const EXPECTED = { ask: "accept:42", sample: "hello from the client" };

const textOf = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

const withDeadline = (promise, ms, what) => {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
};

async function oneRun() {
  const client = callbackClient("elicit-race-client");
  const transport = new StreamableHTTPClientTransport(new URL(args.url));
  try {
    await withDeadline(client.connect(transport), args.timeout, "connect");
    // No pause here: this is the race.
    const res = await client.callTool({ name: args.tool, arguments: {} }, undefined, { timeout: args.timeout });
    const got = textOf(res);
    if (res.isError || got !== EXPECTED[args.tool]) throw new Error(`unexpected result ${JSON.stringify(res)}`);
  } finally {
    try {
      await withDeadline(transport.terminateSession(), 2000, "DELETE");
    } catch {
      // best effort
    }
    await client.close().catch(() => {});
  }
}

const ms = [];
const failures = [];
let stalls = 0;
for (let i = 0; i < args.runs; i++) {
  const t0 = performance.now();
  let error = null;
  try {
    await oneRun();
  } catch (e) {
    error = String(e?.message ?? e);
  }
  const took = Math.round(performance.now() - t0);
  ms.push(took);
  if (error === null && took > args.timeout) error = `run took ${took} ms (> ${args.timeout})`;
  if (error !== null) {
    stalls++;
    if (failures.length < 5) failures.push(`run ${i}: ${error}`);
  }
}
process.stdout.write(JSON.stringify({ runs: args.runs, stalls, failures, ms }) + "\n");
process.exit(0);
