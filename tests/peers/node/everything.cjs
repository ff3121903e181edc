#!/usr/bin/env node
// Launcher for @modelcontextprotocol/server-everything (pinned in package.json, installed by
// scripts/setup-peers) as a legacy (2025-11-25, stateful) backend for mcp-gateway's real-peer tests.
//
// Usage: node tests/peers/node/everything.cjs --port P [--name NAME]
//
// Runs the package's streamableHttp transport at http://127.0.0.1:P/mcp. The package itself calls
// app.listen(PORT) on all interfaces; this launcher patches net.Server.prototype.listen before loading
// it so every listen() is forced onto 127.0.0.1. --port 0 picks a free port. Prints "READY <port>"
// on stdout once listening; the package's own console.log chatter is sent to stderr instead.
// The process environment is reduced to MCP_PEER_NAME (= NAME, default "everything") and PORT, so
// the package's `get-env` tool tells which backend process answered without leaking anything else.
"use strict";

const net = require("node:net");
const path = require("node:path");
const { pathToFileURL } = require("node:url");

const HOST = "127.0.0.1"; // loopback only, always

function parseArgs(argv) {
  const out = { port: null, name: "everything" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--port") out.port = val();
    else if (a === "--name") out.name = val();
    else usage(`unknown argument ${a}`);
  }
  if (out.port === null || !/^\d+$/.test(out.port) || Number(out.port) > 65535) usage("--port P is required (0..65535)");
  out.port = Number(out.port);
  return out;
}

function usage(msg) {
  process.stderr.write(`everything.cjs: ${msg}\nusage: node everything.cjs --port P [--name NAME]\n`);
  process.exit(2);
}

const args = parseArgs(process.argv.slice(2));

// stdout carries only our READY line.
console.log = (...a) => console.error(...a);
console.info = (...a) => console.error(...a);

for (const k of Object.keys(process.env)) delete process.env[k];
process.env.MCP_PEER_NAME = args.name;
process.env.PORT = String(args.port);

// Force every listen() onto loopback, whatever (port, host, backlog, cb) / (options, cb) form is used.
const origListen = net.Server.prototype.listen;
let announced = false;
net.Server.prototype.listen = function (...la) {
  const cb = typeof la[la.length - 1] === "function" ? la.pop() : undefined;
  let opts;
  if (la.length && typeof la[0] === "object" && la[0] !== null && !(la[0] instanceof net.Server)) {
    opts = { ...la[0] };
  } else {
    opts = { port: la[0] === undefined ? 0 : Number(la[0]) };
    if (typeof la[2] === "number") opts.backlog = la[2];
  }
  if (opts.path !== undefined || opts.fd !== undefined || opts.handle !== undefined) {
    throw new Error("everything.cjs: refusing a non-TCP listen()");
  }
  opts.host = HOST;
  opts.ipv6Only = false;
  if (!announced) {
    announced = true;
    this.once("listening", () => {
      process.env.PORT = String(this.address().port);
      process.stdout.write(`READY ${this.address().port}\n`);
    });
  }
  return cb ? origListen.call(this, opts, cb) : origListen.call(this, opts);
};

const entry = path.join(
  __dirname,
  "node_modules",
  "@modelcontextprotocol",
  "server-everything",
  "dist",
  "transports",
  "streamableHttp.js",
);

process.on("SIGTERM", () => process.exit(143));

import(pathToFileURL(entry).href).catch((err) => {
  console.error("everything.cjs: cannot load server-everything (run scripts/setup-peers):", err);
  process.exit(1);
});
