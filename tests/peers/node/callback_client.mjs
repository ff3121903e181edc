// A TypeScript SDK Client that takes the server's callbacks (elicitation and sampling) and
// answers them at once with fixed content: what the issue-17 race clients and the REPL client's
// `fresh_calls` need alike.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

export function callbackClient(name) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {}, sampling: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { answer: "42" } }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: "assistant",
    content: { type: "text", text: "hello from the client" },
    model: "fixed",
    stopReason: "endTurn",
  }));
  return client;
}
