#!/usr/bin/env node
// A 2026-07-28 MCP server from the TypeScript SDK v2 (`@modelcontextprotocol/server` createMcpHandler,
// Node glue from `@modelcontextprotocol/node` toNodeHandler), for the era tests (issue 22).
//
// Usage: node tests/peers/node/modern_server.mjs --port P [--legacy reject|serve] [--name NAME] [--notify]
//        [--cache-ttl-ms N --cache-scope public|private]
//
// http://127.0.0.1:P/mcp (any path is served). --port 0 picks a free port.
//   --legacy reject (default): modern-only strict (`createMcpHandler(f, {legacy: 'reject'})`): a legacy
//            `initialize` is answered 400 -32022 naming the supported revisions; GET/DELETE 405.
//   --legacy serve: the SDK's default stateless legacy fallback as well (a dual backend).
//   --cache-ttl-ms/--cache-scope: the SDK's `cacheHints` for server/discover, the four lists and
//            resources/read (the results' ttlMs and cacheScope; none by default).
//   --notify: declares resources.subscribe and tools/resources listChanged, and adds the tools
//            `touch {uri}` (notifications/resources/updated for uri on the handler's bus, which
//            subscriptions/listen streams read) and `change_tools {}` (notifications/tools/list_changed).
// Prints "READY <port>" on stdout once listening; nothing else goes to stdout.
// Host/Origin guarded to localhost (403 otherwise). SIGTERM/SIGINT -> exit at once (143/130).
// Bind failure -> exit 1. Bad arguments -> exit 2.
//
// Tools:
//   whoami {}                -> NAME
//   echo {text}              -> text
//   progress {steps=3, delay_ms=50} -> `steps` notifications/progress (progress 1..steps, total steps)
//                               on the request's progressToken, then "done:<steps>"
//   log {}                   -> notifications/message at debug, info, warning and error (the SDK drops
//                               those below the request's `_meta` logLevel), then "logged"
//   ask {rounds=2}           -> input_required for elicitation, `rounds` rounds: round k asks
//                               inputRequests {"q<k>": elicitation/create} with requestState "s<k>:<answers>";
//                               returns "answers:<a1>,<a2>" once every round is answered
//                               (an answer is content.answer, or the action when not accepted)
//   sample {prompt="hi"}     -> input_required with sampling/createMessage (key "llm", requestState
//                               "sample:1"); returns "sampled:<reply text>"
//   roots {}                 -> input_required with roots/list (key "roots"); returns "roots:<uri,uri>"
//   endless {}               -> input_required forever (requestState "endless:<n>" grows); for round caps
//   state_echo {}            -> input_required once with a requestState full of odd bytes, then returns
//                               "state:<the requestState it got back>" (byte-exactness)
//   progress_ask {}          -> two rounds; each sends progress 1 and 2 (total 2) on the request's token,
//                               round 1 then asks an elicitation (key "go", requestState "pa:1"),
//                               round 2 returns "progress_ask:<answer>"
// Resources: text://static ("static text"); template text://item/{id} ("item <id>", list: item/1, item/2)
// Prompt: greet {name} -> one user message "Hello, <name>!"
// Capabilities as the SDK advertises them (tools, resources, prompts, logging); instructions set.

import http from "node:http";
import { z } from "zod";
import {
  McpServer,
  ResourceTemplate,
  createMcpHandler,
  inputRequired,
  inputResponse,
} from "@modelcontextprotocol/server";
import { toNodeHandler, localhostHostValidation, localhostOriginValidation } from "@modelcontextprotocol/node";

const HOST = "127.0.0.1";

function usage(msg) {
  process.stderr.write(`modern_server.mjs: ${msg}\nusage: node modern_server.mjs --port P [--legacy reject|serve] [--name NAME]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const out = { port: null, legacy: "reject", name: "modern", notify: false, ttl: null, scope: "private" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === "--port") out.port = val();
    else if (a === "--legacy") out.legacy = val();
    else if (a === "--name") out.name = val();
    else if (a === "--notify") out.notify = true;
    else if (a === "--cache-ttl-ms") out.ttl = Number(val());
    else if (a === "--cache-scope") out.scope = val();
    else usage(`unknown argument ${a}`);
  }
  if (out.port === null || !/^\d+$/.test(out.port) || Number(out.port) > 65535) usage("--port P is required (0..65535)");
  if (out.legacy !== "reject" && out.legacy !== "serve") usage("--legacy must be reject or serve");
  out.port = Number(out.port);
  return out;
}

const args = parseArgs(process.argv.slice(2));
console.log = (...a) => console.error(...a);

const text = (t) => ({ content: [{ type: "text", text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ODD_STATE = "st=\u00e9\u2603 \"q\" \\ +/= \t end";

function answerOf(responses, key) {
  const v = inputResponse(responses, key);
  if (v.kind !== "elicit") return undefined;
  if (v.action !== "accept") return v.action;
  return String(v.content?.answer ?? "");
}

function cacheHints(ttlMs, cacheScope) {
  const hint = { ttlMs, cacheScope };
  const methods = ["server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list"];
  return Object.fromEntries(methods.map((m) => [m, hint]));
}

function factory() {
  const server = new McpServer(
    { name: args.name, version: "2.4.0-test" },
    {
      capabilities: args.notify
        ? { logging: {}, resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } }
        : { logging: {} },
      instructions: `modern test server ${args.name}`,
      ...(args.ttl === null ? {} : { cacheHints: cacheHints(args.ttl, args.scope) }),
    },
  );

  server.registerTool("whoami", { description: "the server's name" }, async () => text(args.name));

  server.registerTool(
    "echo",
    { description: "echo the text", inputSchema: z.object({ text: z.string() }) },
    async ({ text: t }) => text(t),
  );

  server.registerTool(
    "progress",
    {
      description: "progress notifications, then done",
      inputSchema: z.object({ steps: z.number().int().optional(), delay_ms: z.number().int().optional() }),
    },
    async ({ steps = 3, delay_ms = 50 }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
          });
        }
        await sleep(delay_ms);
      }
      return text(`done:${steps}`);
    },
  );

  server.registerTool("log", { description: "log at four levels" }, async (ctx) => {
    for (const level of ["debug", "info", "warning", "error"]) {
      await ctx.mcpReq.log(level, `log at ${level}`, "modern_server");
    }
    return text("logged");
  });

  server.registerTool(
    "ask",
    { description: "elicitation over input_required rounds", inputSchema: z.object({ rounds: z.number().int().optional() }) },
    async ({ rounds = 2 }, ctx) => {
      const prev = ctx.mcpReq.requestState();
      // requestState "s<k>:<a1>,<a2>..." : k rounds answered so far.
      let answers = [];
      if (typeof prev === "string" && prev.startsWith("s")) {
        const colon = prev.indexOf(":");
        const body = prev.slice(colon + 1);
        answers = body === "" ? [] : body.split(",");
        const k = Number(prev.slice(1, colon));
        const a = answerOf(ctx.mcpReq.inputResponses, `q${k}`);
        if (a === undefined) throw new Error(`round ${k} got no answer for q${k}`);
        answers.push(a);
      }
      if (answers.length >= rounds) return text(`answers:${answers.join(",")}`);
      const k = answers.length + 1;
      return inputRequired({
        inputRequests: {
          [`q${k}`]: inputRequired.elicit({
            message: `question ${k}`,
            requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
          }),
        },
        requestState: `s${k}:${answers.join(",")}`,
      });
    },
  );

  server.registerTool(
    "sample",
    { description: "sampling over input_required", inputSchema: z.object({ prompt: z.string().optional() }) },
    async ({ prompt = "hi" }, ctx) => {
      const v = inputResponse(ctx.mcpReq.inputResponses, "llm");
      if (ctx.mcpReq.requestState() === "sample:1" && v.kind === "sampling") {
        const c = v.result.content;
        const t = Array.isArray(c) ? c.map((x) => x.text ?? "").join("") : c?.text ?? "";
        return text(`sampled:${t}`);
      }
      return inputRequired({
        inputRequests: {
          llm: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: prompt } }],
            maxTokens: 16,
          }),
        },
        requestState: "sample:1",
      });
    },
  );

  server.registerTool("roots", { description: "roots over input_required" }, async (ctx) => {
    const v = inputResponse(ctx.mcpReq.inputResponses, "roots");
    if (v.kind === "roots") return text(`roots:${v.roots.map((r) => r.uri).join(",")}`);
    return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
  });

  server.registerTool("endless", { description: "input_required forever" }, async (ctx) => {
    const prev = ctx.mcpReq.requestState();
    const n = typeof prev === "string" ? Number(prev.split(":")[1]) + 1 : 1;
    return inputRequired({
      inputRequests: {
        [`e${n}`]: inputRequired.elicit({
          message: `round ${n}`,
          requestedSchema: { type: "object", properties: { answer: { type: "string" } } },
        }),
      },
      requestState: `endless:${n}`,
    });
  });

  server.registerTool("state_echo", { description: "requestState byte-exactness" }, async (ctx) => {
    const prev = ctx.mcpReq.requestState();
    if (typeof prev === "string") return text(`state:${prev}`);
    return inputRequired({ requestState: ODD_STATE });
  });

  server.registerTool("progress_ask", { description: "progress in two input_required rounds" }, async (ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= 2; i++) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: i, total: 2 } });
      }
      await sleep(20);
    }
    if (ctx.mcpReq.requestState() === "pa:1") return text(`progress_ask:${answerOf(ctx.mcpReq.inputResponses, "go")}`);
    return inputRequired({
      inputRequests: {
        go: inputRequired.elicit({
          message: "go on?",
          requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
        }),
      },
      requestState: "pa:1",
    });
  });

  if (args.notify) {
    server.registerTool(
      "touch",
      { description: "resources/updated for uri", inputSchema: z.object({ uri: z.string() }) },
      async ({ uri }) => {
        handler.notify.resourceUpdated(uri);
        return text(`touched:${uri}`);
      },
    );
    server.registerTool("change_tools", { description: "tools/list_changed" }, async () => {
      handler.notify.toolsChanged();
      return text("changed");
    });
  }

  server.registerResource("static", "text://static", { mimeType: "text/plain" }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: "static text" }],
  }));

  server.registerResource(
    "item",
    new ResourceTemplate("text://item/{id}", {
      list: async () => ({
        resources: [
          { uri: "text://item/1", name: "item 1" },
          { uri: "text://item/2", name: "item 2" },
        ],
      }),
    }),
    { mimeType: "text/plain" },
    async (uri, vars) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: `item ${vars.id}` }] }),
  );

  server.registerPrompt(
    "greet",
    { description: "a greeting", argsSchema: z.object({ name: z.string() }) },
    ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello, ${name}!` } }] }),
  );

  return server;
}

const handler = createMcpHandler(factory, {
  legacy: args.legacy === "reject" ? "reject" : "stateless",
  onerror: (e) => process.stderr.write(`modern_server: ${e?.message ?? e}\n`),
});
const node = toNodeHandler(handler);
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();

const httpServer = http.createServer((req, res) => {
  if (!validateHost(req, res) || !validateOrigin(req, res)) return;
  Promise.resolve(node(req, res)).catch((e) => {
    process.stderr.write(`modern_server: handler failed: ${e?.stack ?? e}\n`);
    if (!res.headersSent) res.writeHead(500).end();
  });
});

httpServer.on("error", (e) => {
  process.stderr.write(`modern_server.mjs: ${e.message}\n`);
  process.exit(1);
});
httpServer.listen(args.port, HOST, () => {
  process.stdout.write(`READY ${httpServer.address().port}\n`);
});
process.on("SIGTERM", () => process.exit(143));
process.on("SIGINT", () => process.exit(130));
