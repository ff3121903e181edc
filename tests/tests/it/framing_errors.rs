//! Request framing the gateway cannot trust (issues 15 and 26): every body or head framing it
//! cannot trust is answered with a JSON-RPC error (-32026, or -32027 for a head too large) and
//! the connection closed, on session routes and on the fast path alike (two differing
//! `Content-Length`s, a bad chunk size, a `Transfer-Encoding` spelled oddly next to a
//! `Content-Length`, `Content-Length: +5`, 5,000 headers). Raw TCP: the framing is the point.
//! `Content-Length` lists: `content_length_lists.rs`.

use mcp_gateway_tests::wire::closed_within;
use mcp_gateway_tests::wire::response;
use mcp_gateway_tests::{Gateway, MockServer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn config(backend: &MockServer, mode: &str) -> String {
    format!(
        "pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: {mode} }} ]\n",
        backend.addr
    )
}

/// Sends `bytes`; the answer's status, JSON body (Null when not JSON) and whether the
/// connection closed within 2 s after it. `None` when nothing came within 5 s.
async fn raw_answer(addr: SocketAddr, bytes: &[u8]) -> Option<(u16, serde_json::Value, bool)> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let _ = stream.write_all(bytes).await;
    let mut reader = BufReader::new(stream);
    let (head, body) = response(&mut reader, Duration::from_secs(5)).await?;
    let mut stream = reader.into_inner();
    let closed = closed_within(&mut stream, Duration::from_secs(2)).await;
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    Some((head.status, json, closed))
}

const CALL: &str =
    r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;

fn cases(host: &str) -> Vec<(&'static str, Vec<u8>)> {
    let chunked = |size: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\n{CALL}\r\n0\r\n\r\n"
        )
        .into_bytes()
    };
    let te_and_cl = |te: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding:{te}\r\nContent-Length: {}\r\n\r\n{CALL}",
            CALL.len()
        )
        .into_bytes()
    };
    vec![
        ("chunk size zz", chunked("zz")),
        ("chunk size 5z", chunked("5z")),
        ("Transfer-Encoding: \" chunked\" with a Content-Length", te_and_cl("  chunked")),
        ("Transfer-Encoding: Chunked with a Content-Length", te_and_cl(" Chunked")),
        ("Transfer-Encoding: \"chunked\\t\" with a Content-Length", te_and_cl(" chunked\t")),
        (
            "Content-Length: +5",
            format!("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: +{}\r\n\r\n{CALL}", CALL.len()).into_bytes(),
        ),
    ]
}

#[tokio::test]
async fn every_framing_error_is_answered_32026_and_the_connection_closed_on_every_path() {
    let stateless = MockServer::start("fast").await;
    let legacy = MockServer::legacy("sessions", 0, "2025-11-25").await;
    for (mode, backend) in [("stateless", &stateless), ("stateful", &legacy)] {
        let gw = Gateway::start(&config(backend, mode)).await;
        let host = gw.addr.to_string();
        for (what, bytes) in cases(&host) {
            let answer = raw_answer(gw.addr, &bytes).await;
            let Some((status, body, closed)) = answer else {
                panic!("{mode}, {what}: closed or silent, no answer");
            };
            assert_eq!(status, 400, "{mode}, {what}: {body}");
            assert_eq!(body["error"]["code"], -32026, "{mode}, {what}: {body}");
            assert_eq!(
                body["error"]["data"]["kind"], "bad-framing",
                "{mode}, {what}"
            );
            assert!(closed, "{mode}, {what}: the connection stays open");
        }
    }
    assert_eq!(
        stateless.count_method("tools/call"),
        0,
        "a call reached the backend"
    );
}

#[tokio::test]
async fn framing_the_gateway_cannot_trust_gets_a_json_rpc_error_and_a_closed_connection() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "stateless")).await;
    let host = format!("Host: {}\r\n", gw.addr);
    let cases: Vec<(&str, Vec<u8>, u16, i64)> = vec![
        (
            "two differing Content-Lengths",
            format!("POST /mcp HTTP/1.1\r\n{host}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}").into_bytes(),
            400,
            -32026,
        ),
        (
            "Transfer-Encoding: xchunked",
            format!("POST /mcp HTTP/1.1\r\n{host}Transfer-Encoding: xchunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n").into_bytes(),
            400,
            -32026,
        ),
        (
            "5,000 headers",
            format!("POST /mcp HTTP/1.1\r\n{host}{}\r\n", "X-A: b\r\n".repeat(5000)).into_bytes(),
            431,
            -32027,
        ),
        (
            "a 1 MiB header",
            format!("POST /mcp HTTP/1.1\r\n{host}X-Big: {}\r\n\r\n", "a".repeat(1 << 20)).into_bytes(),
            431,
            -32027,
        ),
    ];
    for (what, bytes, status, code) in cases {
        let (got, body, closed) = raw_answer(gw.addr, &bytes)
            .await
            .unwrap_or_else(|| panic!("{what}: closed or silent, no answer"));
        assert_eq!(got, status, "{what}: {body}");
        assert_eq!(body["error"]["code"], code, "{what}");
        assert!(body["error"]["data"]["kind"].is_string(), "{what}");
        assert!(closed, "{what}: the connection closes after the answer");
    }
    assert_eq!(backend.count(), 0, "nothing reached the backend");
}
