//! Calls on a virtual route that take pingora's own pipeline (a 2026-07-28 `tools/call` whose
//! `Mcp-Name` the names map resolves at once, to a 2026-07-28 member): the PyPI `mcp` 2.3.0
//! member gets its own name in the body and in `Mcp-Name` (its SDK checks they agree), bodies
//! past pingora's 64 KiB retry buffer pass (declared or chunked), a name escaped in the body is
//! the same name, and a header naming another tool than the body is refused before anything is
//! sent.

use super::{hub, rpc, text, MEMBERS, META};
use mcp_gateway_tests::auth::sha256_hex;
use mcp_gateway_tests::{assert_eventually, Request};
use serde_json::json;

fn raw_call(id: u64, header_name: &str, body_name: &str) -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{body_name}","arguments":{{}},"_meta":{META}}}}}"#
    );
    Request::post("/hub", body)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", header_name)
}

#[tokio::test]
async fn fast_path_calls_reach_the_member_with_its_own_name_in_body_and_header() {
    let hub = hub(MEMBERS).await;
    let gw = &hub.gw;
    // the member's pod tells what `Mcp-Name` it received (a digest)
    let resp = rpc(
        1,
        "tools/call",
        json!({"name": "m.header_digest", "arguments": {"name": "mcp-name"}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(text(&resp), sha256_hex(b"header_digest"), "{}", resp.text());

    // a body past pingora's 64 KiB retry buffer, its name rewritten on the way
    let big = "x".repeat(200_000);
    let resp = rpc(
        2,
        "tools/call",
        json!({"name": "m.echo_size", "arguments": {"text": big}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(text(&resp), "200000");
    // the same body chunked by the client (no length declared): chunked to the member too
    let resp = rpc(
        2,
        "tools/call",
        json!({"name": "m.echo_size", "arguments": {"text": "y".repeat(100_000)}}),
    )
    .chunked(7777)
    .send(gw.addr)
    .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(text(&resp), "100000");

    // the name escaped in the body is the name in the header: routed and rewritten (the body
    // for the member is shorter than its declared length, made up with trailing whitespace)
    let resp = raw_call(3, "m.whoami", r"m.who\u0061mi")
        .send(gw.addr)
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    assert_eq!(text(&resp), "m", "{}", resp.text());

    // a header that names another tool than the body: refused, nothing reaches the member
    let resp = raw_call(4, "m.whoami", "m.sales").send(gw.addr).await;
    assert_eq!(resp.status(), 400, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["id"], 4);
    assert_eq!(v["error"]["code"], -32020, "{v}");
    // a renamed tool: the exposed name on the way in, the member's own on the way out
    let resp = rpc(
        5,
        "tools/call",
        json!({"name": "m.sales", "arguments": {"region": "us"}}),
    )
    .send(gw.addr)
    .await;
    assert_eq!(text(&resp), "m:report:us", "{}", resp.text());
    let routed = gw
        .metric("mcpgw_virtual_member_events_total{event=\"routed\",member=\"m\",route=\"/hub\"}")
        .await;
    assert_eq!(routed, 5.0, "the refused call was not routed");
}

#[tokio::test]
async fn a_fast_path_member_with_no_backend_left_is_named_in_the_error() {
    let hub = hub(MEMBERS).await;
    let gw = &hub.gw;
    // the 2026-07-28 member's only pod goes away
    let mut peers = hub._peers;
    let m = peers.pop().unwrap();
    let addr = m.addr();
    drop(m);
    // gone when its port refuses connections
    assert_eventually!(
        std::time::Duration::from_secs(10),
        tokio::net::TcpStream::connect(&addr).await.is_err(),
        "the member's pod at {addr} went away"
    );
    let resp = rpc(
        6,
        "tools/call",
        json!({"name": "m.whoami", "arguments": {}}),
    )
    .send(gw.addr)
    .await;
    let v = resp.json();
    assert_eq!(v["id"], 6, "{v}");
    assert!(v["error"]["code"].is_i64(), "{v}");
    assert_eq!(v["error"]["data"]["member"], "m", "{v}");
    // the other members go on
    let resp = rpc(7, "tools/call", json!({"name": "whoami", "arguments": {}}))
        .send(gw.addr)
        .await;
    assert_eq!(text(&resp), "a");
}
