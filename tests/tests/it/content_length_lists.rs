//! `Content-Length` given more than once or with leading zeros (issue 31, item 16): a list of
//! the same value (`181, 181`), a second line with the same value, `0181`. RFC 9110 §8.6 lets a
//! recipient refuse such a list or forward it normalized; the gateway refuses (what most proxies
//! do: a proxy forwarding it as sent lets the servers behind it disagree on where the body ends)
//! with the JSON-RPC 400 -32026 of other framing it will not guess at, and closes the connection.
//! Raw TCP, on the fast path and on a session route; the backend must see nothing of it, and a
//! single plain length still goes through as one value.

use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::{Gateway, MockServer};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const CALL: &str = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

fn request(host: &str, lengths: &[String]) -> Vec<u8> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    for l in lengths {
        head.push_str(&format!("Content-Length: {l}\r\n"));
    }
    head.push_str("\r\n");
    [head.as_bytes(), CALL.as_bytes()].concat()
}

/// Sends `bytes`: the answer's status and JSON body, and whether the connection then closed.
async fn answer(addr: std::net::SocketAddr, bytes: &[u8]) -> (u16, serde_json::Value, bool) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut reader = BufReader::new(stream);
    let (head, body) = tokio::time::timeout(Duration::from_secs(5), async {
        let head = read_head(&mut reader, false)
            .await
            .unwrap()
            .expect("an answer");
        let body = read_body(&mut reader, &head, false).await.unwrap();
        (head, body)
    })
    .await
    .expect("answered within 5 s");
    let mut rest = [0u8; 64];
    let closed = matches!(
        tokio::time::timeout(Duration::from_secs(2), reader.read(&mut rest)).await,
        Ok(Ok(0) | Err(_))
    );
    let json = serde_json::from_slice(&body).unwrap_or_default();
    (head.status, json, closed)
}

#[tokio::test]
async fn a_repeated_or_zero_padded_content_length_is_refused_and_never_forwarded() {
    let stateless = MockServer::start("fast").await;
    let legacy = MockServer::legacy("sessions", 0, "2025-11-25").await;
    let n = CALL.len();
    for (mode, backend) in [("stateless", &stateless), ("stateful", &legacy)] {
        let yaml = format!(
            "pools: {{ p: {{ backends: [{}], era: {} }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: {mode} }} ]\n",
            backend.addr,
            if mode == "stateless" { "modern" } else { "legacy" }
        );
        let gw = Gateway::start(&yaml).await;
        let host = gw.addr.to_string();
        let cases = [
            ("a list of one value", vec![format!("{n}, {n}")]),
            ("a list without spaces", vec![format!("{n},{n}")]),
            ("two lines", vec![n.to_string(), n.to_string()]),
            ("a leading zero", vec![format!("0{n}")]),
        ];
        for (what, lengths) in &cases {
            let (status, body, closed) = answer(gw.addr, &request(&host, lengths)).await;
            assert_eq!(status, 400, "{mode}, {what}: {body}");
            assert_eq!(body["error"]["code"], -32026, "{mode}, {what}: {body}");
            assert_eq!(
                body["error"]["data"]["kind"], "bad-framing",
                "{mode}, {what}"
            );
            assert!(closed, "{mode}, {what}: the connection stays open");
        }
        assert_eq!(
            backend.count_method("tools/call"),
            0,
            "{mode}: a refused head reached the backend"
        );
        if mode == "stateless" {
            // the control: one plain length goes through, as one value
            let (status, body, _) = answer(gw.addr, &request(&host, &[n.to_string()])).await;
            assert_eq!(status, 200, "{body}");
            let seen = backend.requests();
            let call = seen.last().expect("the plain call reached the backend");
            let lengths: Vec<&str> = call
                .head
                .headers
                .iter()
                .filter(|(k, _)| k == "content-length")
                .map(|(_, v)| v.as_str())
                .collect();
            assert_eq!(lengths, [n.to_string()], "one Content-Length, as one value");
            assert_eq!(call.body, CALL.as_bytes());
        }
    }
}
