//! Issue 26: half-open connections under `limits.max-connections`. Clients that connect and
//! send only part of a request head hold their slots (the listener reads each without
//! pingora's 64 KiB read buffer, `downstream/endpoint.rs`); one more connection is answered
//! 503 -32018 and closed; once they close, the gateway serves again, and a request sent in
//! pieces (the head split mid-line, as these half-open ones send it) is still read whole.
//! The memory figures are measured by `scripts/bench-half-open` (docs/benchmarks.md), not
//! asserted here.

use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PARTIAL: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic";
const HALF_OPEN: usize = 40;

async fn read_all(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn half_open_connections_hold_their_slots_and_one_more_is_answered_503_and_closed() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&format!(
        "limits:\n  max-connections: {HALF_OPEN}\n  max-connections-per-client: {HALF_OPEN}\nclient-timeouts: {{ header-s: 120 }}\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p }}\n",
        mock.addr
    ))
    .await;
    let mut half_open = Vec::new();
    for _ in 0..HALF_OPEN {
        let mut s = TcpStream::connect(gw.addr).await.expect("connect");
        s.write_all(PARTIAL).await.expect("write");
        half_open.push(s);
    }
    // the gateway has admitted them all before one more comes (each is counted as its task
    // first runs, which may be after a later connection's: tokio runs the newest task first),
    // then every slot is taken: the next gets the JSON-RPC error and the end of the stream
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_client_connections").await == HALF_OPEN as f64,
        "the gateway admitted the HALF_OPEN connections"
    );
    let mut over = TcpStream::connect(gw.addr).await.expect("connect");
    let answer = read_all(&mut over).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(body).expect("a JSON-RPC error");
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["error"]["code"], -32018, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "connections", "{v}");
    assert_eq!(v["error"]["data"]["limit"], HALF_OPEN as u64, "{v}");
    // read_all returned: the gateway closed it
    let mut rest = [0u8; 1];
    assert_eq!(
        over.read(&mut rest).await.unwrap_or(0),
        0,
        "closed after the answer"
    );
    // none of the half-open ones was answered meanwhile
    for s in &mut half_open {
        let mut byte = [0u8; 1];
        let pending = tokio::time::timeout(Duration::from_millis(5), s.read(&mut byte)).await;
        assert!(pending.is_err(), "a half-open connection is still waiting");
    }
    // the last one finishes its head in pieces: it is read whole and served
    let mut last = half_open.pop().unwrap();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"whoami","arguments":{{}},{}}}}}"#,
        mcp_gateway_tests::client::META
    );
    let rest = format!(
        "ation/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: whoami\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    last.write_all(rest.as_bytes()).await.expect("write");
    let answer = read_all(&mut last).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"text\":\"m\""), "{answer}");
    // all leave: slots come back
    drop(half_open);
    assert_eventually!(
        Duration::from_secs(10),
        Request::tools_call("/mcp", 2, "whoami")
            .send(gw.addr)
            .await
            .status()
            == 200,
        "the slots came back"
    );
}
