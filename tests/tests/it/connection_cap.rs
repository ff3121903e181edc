//! The gateway-wide bound on client connections (issue 26: 4,000 half-open connections cost
//! about 360 MB): past `limits.max-connections` a new connection is answered 503 -32018
//! (`data.reason: "connections"`) before it sends anything, and closed; a slot comes back as
//! soon as a connection closes.

use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

async fn read_all(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn connections_over_the_bound_are_answered_503_and_closed_until_one_leaves() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&format!(
        "limits:\n  max-connections: 3\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p }}\n",
        mock.addr
    ))
    .await;
    // three half-open connections: connected, nothing sent
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(gw.addr).await.expect("connect"));
    }
    // the gateway has accepted them all before the fourth comes
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut over = TcpStream::connect(gw.addr).await.expect("connect");
    let answer = read_all(&mut over).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(body).expect("a JSON-RPC error");
    assert_eq!(v["error"]["code"], -32018, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "connections");
    assert_eq!(v["error"]["data"]["limit"], 3);
    assert!(answer.to_ascii_lowercase().contains("retry-after"));
    assert_eq!(
        gw.metric(r#"mcpgw_rejections_total{reason="connections"}"#)
            .await,
        1.0
    );
    // one leaves: its slot comes back, and a real request is served
    drop(idle.pop());
    assert_eventually!(
        Duration::from_secs(5),
        Request::tools_call("/mcp", 1, "whoami")
            .send(gw.addr)
            .await
            .status()
            == 200,
        "a slot came back after a connection closed"
    );
}
