//! `Expect: 100-continue` (issue 26): on a session route to a real FastMCP 1.30.0
//! backend (uvicorn answers `Expect` with its own `100 Continue`) the client gets one `100
//! Continue` and then the answer, and a declared size over `max-body-bytes` gets 413 at once,
//! without waiting for a body the client holds back. Raw TCP; needs `scripts/setup-peers`.

use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::{Gateway, PythonPeer};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[tokio::test]
async fn expect_100_continue_on_a_session_route_gets_one_100_then_the_answer() {
    let backend = PythonPeer::legacy_v1("fastmcp", 0).await;
    let gw = Gateway::start(&format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful, upstream-path: /mcp }} ]\n",
        backend.addr()
    ))
    .await;
    for round in 0..2 {
        let mut stream = TcpStream::connect(gw.addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
            gw.addr,
            INIT.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut reader = BufReader::new(stream);
        let limit = Duration::from_secs(5);
        let interim = tokio::time::timeout(limit, read_head(&mut reader, false))
            .await
            .expect("told to go on")
            .unwrap()
            .unwrap();
        assert_eq!(interim.status, 100, "round {round}");
        reader.get_mut().write_all(INIT.as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(limit, read_head(&mut reader, false))
            .await
            .expect("an answer after the body")
            .unwrap()
            .expect("the answer, not a closed connection");
        assert_eq!(
            answer.status, 200,
            "round {round}: a second 100, or no answer"
        );
        assert!(
            answer.header("mcp-session-id").is_some(),
            "round {round}: no session"
        );
        let body = read_body(&mut reader, &answer, false).await.unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("protocolVersion"), "round {round}: {text}");
    }
}

#[tokio::test]
async fn a_declared_size_over_the_limit_with_expect_gets_413_at_once() {
    let backend = PythonPeer::legacy_v1("fastmcp", 0).await;
    let gw = Gateway::start(&format!(
        "max-body-bytes: 1000\npools: {{ p: {{ backends: [{}] }} }}\nroutes:\n  - {{ path: /mcp, pool: p, mode: stateful, upstream-path: /mcp }}\n  - {{ path: /fast, pool: p, mode: stateless, upstream-path: /mcp }}\n",
        backend.addr()
    ))
    .await;
    for path in ["/mcp", "/fast"] {
        let mut stream = TcpStream::connect(gw.addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n",
            gw.addr
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();
        let mut reader = BufReader::new(stream);
        let answer = tokio::time::timeout(Duration::from_secs(3), read_head(&mut reader, false))
            .await
            .unwrap_or_else(|_| panic!("{path}: no answer while the body is held back"))
            .unwrap()
            .unwrap();
        assert_eq!(answer.status, 413, "{path}");
        assert!(started.elapsed() < Duration::from_secs(1), "{path}");
        let body = read_body(&mut reader, &answer, false).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], -32014, "{path}: {v}");
    }
}
