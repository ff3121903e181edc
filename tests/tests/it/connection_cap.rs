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
        "limits:\n  max-connections: 3\n  max-connections-per-client: 3\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p }}\n",
        mock.addr
    ))
    .await;
    // three half-open connections: connected, nothing sent
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(gw.addr).await.expect("connect"));
    }
    // the gateway has admitted them all before one more comes (each is counted as its task
    // first runs, which may be after a later connection's: tokio runs the newest task first),
    // then every slot is taken: the next gets the JSON-RPC error and the end of the stream
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_client_connections").await == 3.0,
        "the gateway admitted the 3 connections"
    );
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

/// A connection from `source` (a loopback address of its own) to `to`.
async fn connect_from(source: &str, to: std::net::SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source"))
        .expect("bind the source address");
    socket.connect(to).await.expect("connect")
}

/// What arrives on `stream` within `wait` (the refusal, then the close), or nothing.
async fn answer_within(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut out = Vec::new();
    match tokio::time::timeout(wait, stream.read_to_end(&mut out)).await {
        Ok(_) => Some(String::from_utf8_lossy(&out).into_owned()),
        Err(_) => None,
    }
}

/// Issue 31, item 11: one client's idle sockets no longer lock every other client out. Under a
/// gateway-wide `max-connections: 6` and no per-client setting, client A (127.0.0.2) holds its
/// default share (half of the bound: 3) and is refused one more with 503 -32018
/// `scope: "client"`; client B (127.0.0.1) still connects and is served.
#[tokio::test]
async fn one_client_holds_only_its_share_of_connections_and_another_is_still_served() {
    let mock = MockServer::start("m").await;
    let gw = Gateway::start(&format!(
        "limits:\n  max-connections: 6\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /mcp, mode: stateless, pool: p }}\n",
        mock.addr
    ))
    .await;
    // A: four half-open connections; whichever the gateway counted last is refused (no
    // assumption about the order it accepts them in)
    let mut a = Vec::new();
    for _ in 0..4 {
        a.push(connect_from("127.0.0.2", gw.addr).await);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let mut found = None;
        for (i, stream) in a.iter_mut().enumerate() {
            if let Some(answer) = answer_within(stream, Duration::from_millis(50)).await {
                found = Some((i, answer));
                break;
            }
        }
        if let Some(found) = found {
            break found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no connection of A was refused"
        );
    };
    let (index, answer) = refused;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(body).expect("a JSON-RPC error");
    assert_eq!(v["error"]["code"], -32018, "{v}");
    assert_eq!(v["error"]["data"]["reason"], "connections", "{v}");
    assert_eq!(v["error"]["data"]["scope"], "client", "{v}");
    assert_eq!(v["error"]["data"]["limit"], 3, "{v}");
    a.remove(index);
    // B, another address, is served while A holds its three
    let served = Request::tools_call("/mcp", 1, "whoami").send(gw.addr).await;
    assert_eq!(served.status(), 200, "{}", served.text());
    assert_eq!(
        gw.metric(r#"mcpgw_rejections_total{reason="client-connections"}"#)
            .await,
        1.0
    );
    assert_eq!(
        gw.metric(r#"mcpgw_rejections_total{reason="connections"}"#)
            .await,
        0.0
    );
    // one of A's leaves: A gets a slot back, and is served on it
    drop(a.pop());
    assert_eventually!(
        Duration::from_secs(5),
        {
            let mut again = connect_from("127.0.0.2", gw.addr).await;
            let call = Request::tools_call("/mcp", 2, "whoami").header("Connection", "close");
            call.write_to(&mut again, gw.addr).await.is_ok()
                && answer_within(&mut again, Duration::from_secs(5))
                    .await
                    .is_some_and(|answer| answer.starts_with("HTTP/1.1 200"))
        },
        "A's slot came back after its connection closed"
    );
}
