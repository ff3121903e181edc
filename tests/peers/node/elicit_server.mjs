#!/usr/bin/env node
// A stateful TypeScript SDK server (@modelcontextprotocol/sdk, pinned in package.json) whose tools
// send server-initiated requests WITHOUT a related request id, the way issue 17 saw them: the SDK
// then writes the request on the session's standalone GET SSE stream, and, with no event store,
// drops it when no GET stream is open at that moment (webStandardStreamableHttp.js `send`: no
// relatedRequestId -> `_GET_stream`; absent -> return). The tool then waits until its request
// times out.
//
// Usage: node tests/peers/node/elicit_server.mjs --port P [--request-timeout-ms T]
//
// http://127.0.0.1:P/mcp, one StreamableHTTPServerTransport + McpServer per session
// (sessionIdGenerator: randomUUID, no event store, SSE answers). --port 0 picks a free port.
// Prints "READY <port>" on stdout once listening; nothing else goes to stdout.
// Tools (no arguments):
//   ask    -> elicitation/create {message, requestedSchema {answer: string}}; returns
//             "accept:<content.answer>" (or "<action>" when not accepted)
//   sample -> sampling/createMessage {messages:[...], maxTokens}; returns the reply's text
//   test_elicitation {message}, test_sampling {prompt}: the same, under the names the
//             conformance suite's tools-call-elicitation / tools-call-sampling scenarios call
// Either request waits at most T ms (default 3000), then the tool fails with the SDK's
// -32001 "Request timed out".
// SIGTERM/SIGINT -> exit at once (143/130). Bind failure -> exit 1. Bad arguments -> exit 2.

import http from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  isInitializeRequest,
} from "@modelcontextprotocol/sdk/types.js";

const HOST = "127.0.0.1";

function usage(msg) {
  process.stderr.write(`elicit_server.mjs: ${msg}\nusage: node elicit_server.mjs --port P [--request-timeout-ms T]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const out = { port: null, timeout: 3000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === "--port") out.port = val();
    else if (a === "--request-timeout-ms") out.timeout = Number(val());
    else usage(`unknown argument ${a}`);
  }
  if (out.port === null || !/^\d+$/.test(out.port) || Number(out.port) > 65535) usage("--port P is required (0..65535)");
  if (!Number.isFinite(out.timeout) || out.timeout <= 0) usage("--request-timeout-ms must be a positive number");
  out.port = Number(out.port);
  return out;
}

const args = parseArgs(process.argv.slice(2));
console.log = (...a) => console.error(...a);

const text = (t) => ({ content: [{ type: "text", text: t }] });

function newServer() {
  const server = new McpServer({ name: "elicit-server", version: "1.0.0" });
  // `server.server.request` without relatedRequestId: the standalone GET stream, or nowhere.
  const elicit = async (message) => {
    const res = await server.server.request(
      {
        method: "elicitation/create",
        params: {
          message,
          requestedSchema: {
            type: "object",
            properties: { answer: { type: "string" } },
            required: ["answer"],
          },
        },
      },
      ElicitResultSchema,
      { timeout: args.timeout },
    );
    return text(res.action === "accept" ? `accept:${res.content?.answer ?? JSON.stringify(res.content)}` : res.action);
  };
  const sample = async (prompt) => {
    const res = await server.server.request(
      {
        method: "sampling/createMessage",
        params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 16 },
      },
      CreateMessageResultSchema,
      { timeout: args.timeout },
    );
    return text(res.content?.type === "text" ? res.content.text : JSON.stringify(res.content));
  };
  server.registerTool("ask", { description: "elicitation/create on the GET stream" }, () => elicit("What is the answer?"));
  server.registerTool("sample", { description: "sampling/createMessage on the GET stream" }, () => sample("Say hi"));
  server.registerTool(
    "test_elicitation",
    { description: "conformance fixture: elicitation", inputSchema: { message: z.string() } },
    ({ message }) => elicit(message),
  );
  server.registerTool(
    "test_sampling",
    { description: "conformance fixture: sampling", inputSchema: { prompt: z.string() } },
    ({ prompt }) => sample(prompt),
  );
  return server;
}

const transports = new Map(); // session id -> transport

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function jsonError(res, status, code, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

async function handle(req, res) {
  const url = new URL(req.url, `http://${HOST}`);
  if (url.pathname !== "/mcp") return jsonError(res, 404, -32601, "Not found");
  const sid = req.headers["mcp-session-id"];
  if (sid !== undefined) {
    const transport = transports.get(sid);
    if (!transport) return jsonError(res, 404, -32001, "Session not found");
    if (req.method === "POST") {
      let body;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return jsonError(res, 400, -32700, "Parse error");
      }
      return transport.handleRequest(req, res, body);
    }
    return transport.handleRequest(req, res);
  }
  if (req.method !== "POST") return jsonError(res, 400, -32000, "Bad Request: No valid session ID provided");
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return jsonError(res, 400, -32700, "Parse error");
  }
  if (!isInitializeRequest(body)) return jsonError(res, 400, -32000, "Bad Request: Server not initialized");
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  await newServer().connect(transport);
  return transport.handleRequest(req, res, body);
}

const httpServer = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    process.stderr.write(`elicit_server.mjs: ${e?.stack ?? e}\n`);
    if (!res.headersSent) jsonError(res, 500, -32603, "Internal error");
    else res.end();
  });
});
httpServer.on("error", (e) => {
  process.stderr.write(`elicit_server.mjs: ${e.message}\n`);
  process.exit(1);
});
httpServer.listen(args.port, HOST, () => {
  process.stdout.write(`READY ${httpServer.address().port}\n`);
});
process.on("SIGTERM", () => process.exit(143));
process.on("SIGINT", () => process.exit(130));
