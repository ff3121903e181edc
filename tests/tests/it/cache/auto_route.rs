//! Issue 60: on an `auto` route, a 2026-07-28 body that comes without the
//! `MCP-Protocol-Version` header goes the way the same body with the header goes, through
//! the cache (before, the session handler sent it straight to a backend, every time).

use super::{Backend, META, PUBLIC};
use mcp_gateway_tests::{Gateway, Request};
use std::time::Duration;

/// `tools/list`, its body 2026-07-28 (`_meta`), without the version header.
fn list_without_version(id: u64) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"_meta":{META}}}}}"#
    );
    Request::post("/mcp", body).header("Mcp-Method", "tools/list")
}

#[tokio::test]
async fn a_list_without_the_version_header_on_an_auto_route_is_answered_from_the_cache() {
    let backend = Backend::start(&[("tools/list", PUBLIC)], Duration::ZERO).await;
    let gw = Gateway::start(&format!(
        "pools:\n  p: {{ era: modern, backends: [{}] }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: auto }}\n",
        backend.addr
    ))
    .await;
    let first = list_without_version(1).send(gw.addr).await;
    assert_eq!(first.status(), 200, "{}", first.text());
    assert_eq!(first.json()["result"]["tools"][0]["name"], "a");
    let second = list_without_version(2).send(gw.addr).await;
    assert_eq!(second.head.header("mcp-gateway-cache"), Some("hit"));
    assert_eq!(second.json()["id"], 2, "{}", second.text());
    assert_eq!(backend.count("tools/list"), 1, "the backend was asked once");
}
