// A TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0) pinned to 2026-07-28
// (`versionNegotiation: {mode: {pin: "2026-07-28"}}`: no fallback) for the reverse era bridge's tests
// (issue 23), against tests/peers/pooled_server.py (FastMCP 1.30.0) behind the gateway.
//
// Usage: node modern_client.mjs --url URL [--name CLIENT_NAME] tour|list
//   list -> {"protocol", "tools": [names], "ttl": the tools/list result's ttlMs, "whoami"} (connect, list the
//           tools, call whoami: an agent starting; any 2026-07-28 server)
//   tour -> {"tools", "progress", "progress_text", "resource", "prompt", "logs": [[level, data]...], "log_text",
//            "counts", "sessions_seen", "server", "protocol"} (the same steps as modern_client_v2.py's tour; the
//            log level "info" is sent as `_meta` io.modelcontextprotocol/logLevel on the log_some call)
// The last stdout line is one JSON object; exit 0 on success, 1 with {"error": "..."} on failure.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function main() {
  const url = arg("--url");
  const name = arg("--name", "pinned-ts");
  const client = new Client(
    { name, version: "1.0.0" },
    { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const logs = [];
  client.setNotificationHandler("notifications/message", (n) => {
    logs.push([n.params.level, n.params.data]);
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const out = { protocol: client.getNegotiatedProtocolVersion?.() ?? null };
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name).sort();
  if (process.argv.includes("list")) {
    out.ttl = tools.ttlMs ?? null;
    out.whoami = text(await client.callTool({ name: "whoami", arguments: {} }));
    await client.close();
    return out;
  }
  const progress = [];
  const res = await client.callTool(
    { name: "slow_progress", arguments: { steps: 3, delay_ms: 100 } },
    { onprogress: (p) => progress.push(p.progress) },
  );
  out.progress = progress;
  out.progress_text = text(res);
  const read = await client.readResource({ uri: "note://greeting" });
  out.resource = read.contents.map((c) => c.text || "").join("");
  const prompt = await client.getPrompt({ name: "greet", arguments: { who: "ada" } });
  out.prompt = prompt.messages.map((m) => m.content.text || "").join("");
  const logged = await client.callTool({
    name: "log_some",
    arguments: {},
    _meta: { "io.modelcontextprotocol/logLevel": "info" },
  });
  out.log_text = text(logged);
  out.logs = logs;
  out.counts = [];
  for (let i = 0; i < 3; i++) out.counts.push(text(await client.callTool({ name: "count", arguments: {} })));
  out.sessions_seen = text(await client.callTool({ name: "sessions_seen", arguments: {} }));
  out.server = text(await client.callTool({ name: "whoami", arguments: {} }));
  await client.close();
  return out;
}

main().then(
  (out) => {
    process.stdout.write(JSON.stringify(out) + "\n");
    process.exit(0);
  },
  (e) => {
    process.stdout.write(JSON.stringify({ error: `${e?.name}: ${e?.message}`, code: e?.code ?? null }) + "\n");
    process.exit(1);
  },
);
