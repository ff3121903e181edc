// Preloaded (`node --require`) into the conformance suite when it plays the server of a client
// scenario: every server it opens listens on 127.0.0.1 only (the tests never listen on another
// address), and its first `listen(0)` takes the port MCPGW_LISTEN_PORT names, so that a gateway
// started before it can already name it as its backend.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
let fixed = process.env.MCPGW_LISTEN_PORT ? Number(process.env.MCPGW_LISTEN_PORT) : undefined;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || args[0] === undefined) {
    let port = args[0] ?? 0;
    if (port === 0 && fixed !== undefined) {
      port = fixed;
      fixed = undefined;
    }
    const rest = args.slice(1).filter((a) => typeof a === "function" || typeof a === "number");
    return listen.call(this, port, "127.0.0.1", ...rest);
  }
  if (args[0] && typeof args[0] === "object" && !Array.isArray(args[0])) {
    return listen.call(this, { ...args[0], host: "127.0.0.1" }, ...args.slice(1));
  }
  return listen.apply(this, args);
};
