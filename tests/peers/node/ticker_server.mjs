#!/usr/bin/env node
// A stateful TypeScript SDK server (@modelcontextprotocol/sdk, pinned in package.json) that sends
// notifications on the session's standalone GET stream only (no related request id, no event
// store: the SDK drops one when no GET stream is open), and reports what its GETs saw, so a test
// can check that a gateway with several replicas never opens two GETs for one session and that
// every tick sent while a GET was open reached the client once.
//
// Usage: node tests/peers/node/ticker_server.mjs --port P [--event-store]   (--port 0: a free port)
// --event-store: each session keeps every message it sends (ids `<stream>|<n>`) and replays the
// ones after a GET's Last-Event-ID (the SDK's example store cannot: it cuts `_GET_stream` at `_`).
// http://127.0.0.1:P/mcp; prints "READY <port>" on stdout once listening.
// Tool `ticks {count, interval_ms}`: returns at once, then sends `notifications/message` with
// `data: {tick: n, sent_ms}` (n = 1..count; sent_ms: the wall clock in fractional ms) every
// interval_ms on the GET stream.
// GET http://127.0.0.1:P/stats -> JSON {gets: [{session, opened_ms, closed_ms, status, first_tick}],
//   ticks: [{session, n, at_ms, open}], max_concurrent_gets, refused_gets}: `open` says whether a
//   GET stream of the session was open when tick n was sent (a tick sent with none is dropped).
// SIGTERM/SIGINT -> exit at once.

import http from "node:http";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const HOST = "127.0.0.1";
const portArg = process.argv.indexOf("--port");
const PORT = portArg >= 0 ? Number(process.argv[portArg + 1]) : 0;
const EVENT_STORE = process.argv.includes("--event-store");

class EventStore {
  constructor() {
    this.events = [];
  }
  async storeEvent(streamId, message) {
    const eventId = `${streamId}|${this.events.length}`;
    this.events.push({ eventId, streamId, message });
    return eventId;
  }
  async getStreamIdForEventId(eventId) {
    return this.events.find((e) => e.eventId === eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const at = this.events.findIndex((e) => e.eventId === lastEventId);
    if (at < 0) return "";
    const streamId = this.events[at].streamId;
    for (const e of this.events.slice(at + 1)) {
      if (e.streamId === streamId) await send(e.eventId, e.message);
    }
    return streamId;
  }
}
console.log = (...a) => console.error(...a);

const stats = { gets: [], ticks: [], max_concurrent_gets: 0, refused_gets: 0 };
const openGets = new Map(); // session -> open GET streams
let tickCounter = 0; // ticks sent, all sessions (first_tick of a GET)

function newServer(sessionOf) {
  const server = new McpServer({ name: "ticker-server", version: "1.0.0" }, { capabilities: { logging: {} } });
  server.registerTool(
    "ticks",
    { description: "notifications on the GET stream", inputSchema: { count: z.number(), interval_ms: z.number() } },
    ({ count, interval_ms }) => {
      const session = sessionOf();
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        tickCounter += 1;
        stats.ticks.push({ session, n, at_ms: Date.now(), open: (openGets.get(session) ?? 0) > 0 });
        server.server
          .notification({ method: "notifications/message", params: { level: "info", data: { tick: n, sent_ms: performance.timeOrigin + performance.now() } } })
          .catch(() => {});
        if (n >= count) clearInterval(timer);
      }, interval_ms);
      return { content: [{ type: "text", text: `ticking ${count}` }] };
    },
  );
  return server;
}

const transports = new Map();

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

function trackGet(sid, req, res) {
  const entry = { session: sid, opened_ms: Date.now(), closed_ms: null, status: null, first_tick: tickCounter + 1 };
  stats.gets.push(entry);
  const n = (openGets.get(sid) ?? 0) + 1;
  openGets.set(sid, n);
  stats.max_concurrent_gets = Math.max(stats.max_concurrent_gets, n);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    entry.closed_ms = Date.now();
    entry.status = res.statusCode;
    if (res.statusCode === 409) stats.refused_gets += 1;
    openGets.set(sid, (openGets.get(sid) ?? 1) - 1);
  };
  res.on("close", close);
  res.on("finish", close);
}

async function handle(req, res) {
  const url = new URL(req.url, `http://${HOST}`);
  if (url.pathname === "/stats") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(stats));
  }
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
    if (req.method === "GET") trackGet(sid, req, res);
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
    ...(EVENT_STORE ? { eventStore: new EventStore() } : {}),
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  await newServer(() => transport.sessionId).connect(transport);
  return transport.handleRequest(req, res, body);
}

const httpServer = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    process.stderr.write(`ticker_server.mjs: ${e?.stack ?? e}\n`);
    if (!res.headersSent) jsonError(res, 500, -32603, "Internal error");
    else res.end();
  });
});
httpServer.on("error", (e) => {
  process.stderr.write(`ticker_server.mjs: ${e.message}\n`);
  process.exit(1);
});
httpServer.listen(PORT, HOST, () => {
  process.stdout.write(`READY ${httpServer.address().port}\n`);
});
process.on("SIGTERM", () => process.exit(143));
process.on("SIGINT", () => process.exit(130));
