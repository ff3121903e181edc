//! A legacy client's `resources/subscribe` on 2026-07-28 backends (issue 22): the gateway
//! holds a `subscriptions/listen` stream for the session while the client's GET stream is
//! open, and its notifications reach that GET stream as a legacy server sends them. Against
//! the TypeScript SDK v2 `createMcpHandler({legacy: 'reject'})` server (`--notify`: it declares
//! subscriptions and publishes updates on its bus from the `touch` tool).

use mcp_gateway_tests::bridge::LegacyClient;
use mcp_gateway_tests::wire::{read_chunk, read_head};
use mcp_gateway_tests::{Gateway, PythonPeer, Request};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

fn config(backends: &[String]) -> String {
    format!(
        "sessions:\n  resume:\n    keep-alive-s: 1\npools:\n  modern:\n    era: modern\n    retries: 1\n    backends: [{}]\nroutes:\n  - path: /mcp\n    pool: modern\n    mode: stateful\n",
        backends.join(", ")
    )
}

#[tokio::test]
async fn a_legacy_clients_subscription_is_heard_on_its_get_stream_until_it_unsubscribes() {
    let server = PythonPeer::modern_ts_with("m1", &["--legacy", "reject", "--notify"]).await;
    let gw = Gateway::start(&config(&[server.addr()])).await;
    for client in LegacyClient::ALL {
        let (ok, v) = client.run(&gw.url("/mcp"), "subscribe", None).await;
        assert!(ok, "{client:?}: {v}");
        assert_eq!(
            v["updated"],
            json!(["text://item/3"]),
            "{client:?}: the subscribed URI's update, not the other one's: {v}"
        );
        assert!(
            v["tools_changed"].as_u64() >= Some(1),
            "{client:?}: list changes too: {v}"
        );
        assert_eq!(
            v["after_unsubscribe"],
            json!(["text://item/3"]),
            "{client:?}: nothing after unsubscribe: {v}"
        );
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"9"}}}"#;

fn in_session(sid: &str, body: String) -> Request {
    Request::post("/mcp", body)
        .header("Mcp-Session-Id", sid)
        .header("MCP-Protocol-Version", "2025-11-25")
}

/// The GET stream's chunks as they come, read by a task of their own.
fn chunks(mut stream: BufReader<TcpStream>) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(chunk)) = read_chunk(&mut stream).await {
            if tx
                .send(String::from_utf8_lossy(&chunk).into_owned())
                .is_err()
            {
                return;
            }
        }
    });
    rx
}

/// Whether an event containing `needle` comes within `within`.
async fn heard(
    events: &mut mpsc::UnboundedReceiver<String>,
    needle: &str,
    within: Duration,
) -> bool {
    let wait = async {
        while let Some(chunk) = events.recv().await {
            if chunk.contains(needle) {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(within, wait).await.unwrap_or(false)
}

#[tokio::test]
async fn a_subscription_survives_the_death_of_the_pod_its_listen_stream_was_on() {
    let mut a = PythonPeer::modern_ts_with("a", &["--legacy", "reject", "--notify"]).await;
    let mut b = PythonPeer::modern_ts_with("b", &["--legacy", "reject", "--notify"]).await;
    let gw = Gateway::start(&config(&[a.addr(), b.addr()])).await;
    let resp = Request::post("/mcp", INIT).send(gw.addr).await;
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let sid = resp.head.header("mcp-session-id").unwrap().to_owned();
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    assert_eq!(in_session(&sid, note).send(gw.addr).await.status(), 202);

    let mut tcp = TcpStream::connect(gw.addr).await.unwrap();
    Request::session_stream(&sid)
        .write_to(&mut tcp, gw.addr)
        .await
        .unwrap();
    let mut stream = BufReader::new(tcp);
    let head = read_head(&mut stream, false).await.unwrap().unwrap();
    assert!(head.chunked(), "{head:?}");
    let mut events = chunks(stream);

    let uri = "text://item/9";
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
        "params": {"uri": uri}});
    let resp = in_session(&sid, subscribe.to_string()).send(gw.addr).await;
    assert_eq!(resp.json()["result"], json!({}), "{}", resp.text());

    // whichever pod holds the listen, the one left takes it over
    a.kill().await;
    let touch = |id: u64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "touch", "arguments": {"uri": uri}}});
        in_session(&sid, body.to_string())
    };
    let mut got = false;
    for id in 10..30 {
        let resp = touch(id).send(gw.addr).await;
        let v: Value = resp.json();
        assert_eq!(
            v["result"]["content"][0]["text"],
            format!("touched:{uri}"),
            "{v}"
        );
        if heard(
            &mut events,
            "notifications/resources/updated",
            Duration::from_millis(500),
        )
        .await
        {
            got = true;
            break;
        }
    }
    assert!(
        got,
        "the update reached the GET stream after the pod's death"
    );
    b.kill().await;
}
