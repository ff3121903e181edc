#!/usr/bin/env node
// A legacy (TypeScript SDK 1.32.2, @modelcontextprotocol/sdk) client for the era-bridge tests
// (issue 22): the same scenarios as tests/peers/bridge_client_v1.py, one JSON object on the last
// stdout line.
//
// Usage: node tests/peers/node/bridge_client_v1.mjs --url URL SCENARIO [ARG]
//   tour | ask ROUNDS | ask-nocap | sample | roots | roots-nocap | endless | connect |
//   progress-rounds | state-echo | subscribe
// Errors: {"error": "...", "code": C, "data": D}; exit 0 for the *-nocap and endless scenarios
// when the call failed with a JSON-RPC error, 1 otherwise.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
const urlAt = argv.indexOf("--url");
if (urlAt < 0 || !argv[urlAt + 1]) {
  process.stderr.write("usage: bridge_client_v1.mjs --url URL SCENARIO [ARG]\n");
  process.exit(2);
}
const url = argv[urlAt + 1];
const rest = argv.filter((_, i) => i !== urlAt && i !== urlAt + 1);
const [scenario, arg] = rest;
const expectsError = ["ask-nocap", "roots-nocap", "endless"].includes(scenario);
console.log = (...a) => console.error(...a);

function out(obj, code) {
  process.stdout.write(JSON.stringify(obj) + "\n");
  process.exit(code);
}

async function run() {
  const calls = { elicit: 0, sample: 0, roots: 0 };
  const logs = [];
  const capabilities = {};
  if (["ask", "endless", "tour", "progress-rounds"].includes(scenario)) capabilities.elicitation = {};
  if (scenario === "sample") capabilities.sampling = {};
  if (scenario === "roots") capabilities.roots = {};
  const client = new Client({ name: "ts-legacy", version: "1.32.2" }, { capabilities });
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async () => {
      calls.elicit += 1;
      return { action: "accept", content: { answer: `A${calls.elicit}` } };
    });
  }
  if (capabilities.sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      calls.sample += 1;
      return { role: "assistant", content: { type: "text", text: "sampled text" }, model: "fixed" };
    });
  }
  if (capabilities.roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      calls.roots += 1;
      return { roots: [{ uri: "file:///a" }, { uri: "file:///b" }] };
    });
  }
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params.level));
  const updated = [];
  let toolsChanged = 0;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => (toolsChanged += 1));
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const until = async (check, ms) => {
    const end = Date.now() + ms;
    while (!check() && Date.now() < end) await sleep(50);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const res = {
    protocol: transport.protocolVersion,
    server: client.getServerVersion()?.name,
    instructions: client.getInstructions(),
    session: Boolean(transport.sessionId),
  };
  try {
    if (scenario === "connect") return res;
    if (scenario === "tour") {
      res.tools = (await client.listTools()).tools.map((t) => t.name).sort();
      const progress = [];
      const r1 = await client.callTool({ name: "progress", arguments: { steps: 3 } }, undefined, {
        onprogress: (p) => progress.push(p.progress),
      });
      res.progress = progress;
      res.progress_text = r1.content[0].text;
      res.whoami = (await client.callTool({ name: "whoami", arguments: {} })).content[0].text;
      res.read = (await client.readResource({ uri: "text://item/7" })).contents[0].text;
      res.prompt = (await client.getPrompt({ name: "greet", arguments: { name: "Zoe" } })).messages[0].content.text;
      logs.length = 0;
      await client.setLoggingLevel("warning");
      res.log_text = (await client.callTool({ name: "log", arguments: {} })).content[0].text;
      await new Promise((r) => setTimeout(r, 200));
      res.logs = [...logs];
      res.ping = (await client.ping()) !== undefined;
      res.templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      return res;
    }
    if (scenario === "progress-rounds") {
      const progress = [];
      const r = await client.callTool({ name: "progress_ask", arguments: {} }, undefined, {
        onprogress: (p) => progress.push([p.progress, p.total]),
      });
      return Object.assign(res, { text: r.content[0].text, progress, calls });
    }
    if (scenario === "subscribe") {
      await sleep(500); // the client opens its GET stream after initialized
      await client.subscribeResource({ uri: "text://item/3" });
      await client.callTool({ name: "touch", arguments: { uri: "text://item/3" } });
      await client.callTool({ name: "touch", arguments: { uri: "text://item/4" } });
      await until(() => updated.length > 0, 5000);
      await sleep(300);
      res.updated = [...updated];
      await client.callTool({ name: "change_tools", arguments: {} });
      await until(() => toolsChanged > 0, 5000);
      res.tools_changed = toolsChanged;
      await client.unsubscribeResource({ uri: "text://item/3" });
      await client.callTool({ name: "touch", arguments: { uri: "text://item/3" } });
      await sleep(500);
      res.after_unsubscribe = [...updated];
      return res;
    }
    if (scenario === "state-echo") {
      res.text = (await client.callTool({ name: "state_echo", arguments: {} })).content[0].text;
      return res;
    }
    const [tool, args] = {
      ask: ["ask", { rounds: Number(arg ?? 2) }],
      "ask-nocap": ["ask", {}],
      sample: ["sample", {}],
      roots: ["roots", {}],
      "roots-nocap": ["roots", {}],
      endless: ["endless", {}],
    }[scenario];
    const started = Date.now();
    const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 30000 });
    Object.assign(res, {
      text: result.content?.[0]?.text ?? null,
      isError: Boolean(result.isError),
      calls,
      seconds: (Date.now() - started) / 1000,
    });
    return res;
  } finally {
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
}

run().then(
  (res) => out(res, expectsError ? 1 : 0),
  (e) => out({ error: `${e?.name}: ${e?.message}`, code: e?.code, data: e?.data }, expectsError && typeof e?.code === "number" ? 0 : 1),
);
