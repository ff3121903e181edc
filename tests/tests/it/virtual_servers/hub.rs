//! What the virtual-server tests against real SDK peers on `/hub` share: raw 2026-07-28
//! requests (a read, a call with its `Mcp-Name`), the gateway's -32037 refusal, the route's
//! YAML and a bound on every answer.

use super::{rpc_on, META};
use base64::Engine;
use mcp_gateway_tests::{Gateway, PythonPeer, Request, Response};
use serde_json::json;
use std::time::Duration;

/// A generous bound on every answer (a debug build on a loaded machine answers in well under a
/// second): the failure signal of a gateway stuck in a match, never a timing assertion.
pub(super) const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// `req` sent to the gateway, answered within [`ANSWER_WITHIN`].
pub(super) async fn answered(gw: &Gateway, req: Request, what: &str) -> Response {
    tokio::time::timeout(ANSWER_WITHIN, req.send(gw.addr))
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {ANSWER_WITHIN:?}"))
}

/// A 2026-07-28 `resources/read` of `uri` on `/hub` (`Mcp-Name` is the URI, as the body says).
pub(super) fn read(id: u64, uri: &str) -> Request {
    rpc_on("/hub", id, "resources/read", json!({"uri": uri})).header("Mcp-Name", uri)
}

/// A 2026-07-28 `tools/call` of `name` on `/hub`; a name that is not ASCII goes in `Mcp-Name` in
/// its `=?base64?…?=` form (a header value carries no raw UTF-8).
pub(super) fn call(id: u64, name: &str) -> Request {
    let header = if name.is_ascii() {
        name.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(name.as_bytes());
        format!("=?base64?{b64}?=")
    };
    let mut body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    body["params"]["_meta"] = serde_json::from_str(META).unwrap();
    Request::post("/hub", body.to_string())
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", &header)
}

/// The gateway's own -32037 `unknown-name` for `name`, with the request's id.
pub(super) fn assert_unknown(resp: &Response, id: u64, name: &str) {
    assert_eq!(resp.status(), 200, "{name}: {}", resp.text());
    let v = resp.json();
    assert_eq!(v["id"], id, "{name}: {v}");
    assert_eq!(v["error"]["code"], -32037, "{name}: {v}");
    assert_eq!(v["error"]["data"]["reason"], "unknown-name", "{name}: {v}");
    assert_eq!(v["error"]["data"]["name"], name, "{name}: {v}");
}

/// The text of a `resources/read` answer's first content.
pub(super) fn contents(resp: &Response) -> String {
    let v = resp.json();
    v["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no contents: {v}"))
        .to_owned()
}

/// How many calls the gateway routed to `member` of `/hub`.
pub(super) async fn routed(gw: &Gateway, member: &str) -> f64 {
    gw.metric(&format!(
        "mcpgw_virtual_member_events_total{{event=\"routed\",member=\"{member}\",route=\"/hub\"}}"
    ))
    .await
}

/// A virtual route `/hub` (upstream path `/mcp`) with `extra` route keys and these members;
/// `pools` are `(name, era, address)` (`None`: the era is found out).
pub(super) fn hub_yaml(
    pools: &[(&str, Option<&str>, String)],
    extra: &str,
    members: &str,
) -> String {
    let mut yaml = String::from("pools:\n");
    for (name, era, addr) in pools {
        let era = era.map(|e| format!("era: {e}, ")).unwrap_or_default();
        yaml.push_str(&format!("  {name}: {{ {era}backends: [{addr}] }}\n"));
    }
    yaml.push_str(&format!(
        "routes:\n  - path: /hub\n    mode: virtual\n    upstream-path: /mcp\n{extra}    members:\n{members}"
    ));
    yaml
}

/// `/hub` over two legacy peers: `a` bare (`prefix: never`, listed first) and `b` prefixed.
pub(super) fn bare_a_and_b(a: &PythonPeer, b: &PythonPeer) -> String {
    hub_yaml(
        &[
            ("a", Some("legacy"), a.addr()),
            ("b", Some("legacy"), b.addr()),
        ],
        "",
        "      - { name: a, pool: a, prefix: never }\n      - { name: b, pool: b }\n",
    )
}
