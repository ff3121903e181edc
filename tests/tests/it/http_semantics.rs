//! HTTP/1.1 semantics at the listener (issue 15): what a client controls at the HTTP layer
//! (`Expect: 100-continue`, HTTP/1.0, pipelining, which method it uses, what it hides inside
//! fields the gateway skips) never reaches a backend unchecked or gets a bare answer. Raw TCP
//! where the bytes matter. Slow clients: `slow_clients.rs`; framing: `framing_errors.rs`.

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::wire::{json, read_head, response};
use mcp_gateway_tests::{open_session, Gateway, MockServer, Request};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn config(backend: &MockServer, mode: &str, extra: &str) -> String {
    format!(
        "{extra}pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: {mode} }} ]\n",
        backend.addr
    )
}

#[tokio::test]
async fn an_expect_100_continue_is_answered_where_the_gateway_reads_the_body() {
    let backend = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&config(&backend, "stateful", "")).await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n",
        gw.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let interim = tokio::time::timeout(Duration::from_secs(3), read_head(&mut reader, false))
        .await
        .expect("told to go on")
        .unwrap()
        .unwrap();
    assert_eq!(interim.status, 100);
}

#[tokio::test]
async fn an_http_1_0_client_never_gets_a_chunked_answer() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "stateless", "")).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"sse_progress","arguments":{{"steps":2,"gap_ms":10}},{META}}}}}"#
    );
    let req = format!(
        "POST /mcp HTTP/1.0\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: sse_progress\r\nContent-Length: {}\r\n\r\n{body}",
        gw.addr,
        body.len()
    );
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut all))
        .await
        .expect("the answer ends with the connection")
        .unwrap();
    let text = String::from_utf8_lossy(&all).to_ascii_lowercase();
    let head = &text[..text.find("\r\n\r\n").expect("a head")];
    assert!(!head.contains("transfer-encoding"), "{head}");
    assert!(text.contains("\"result\""), "{text}");
}

#[tokio::test]
async fn malformed_json_inside_skipped_fields_never_reaches_a_session_backend() {
    let backend = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&config(&backend, "stateful", "")).await;
    let sid = open_session(gw.addr).await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let mut bad_utf8 = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{"x":""#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe]);
    bad_utf8.extend_from_slice(br#""}}}"#);
    let bodies = [
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"whoami","arguments":{{"x":{deep}}}}}}}"#).into_bytes(),
        bad_utf8,
    ];
    for body in bodies {
        let resp = Request::post("/mcp", body)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-11-25")
            .send(gw.addr)
            .await;
        assert_eq!(resp.status(), 400);
        assert_eq!(resp.json()["error"]["code"], -32700);
    }
    assert_eq!(backend.count_method("tools/call"), 0);
}

#[tokio::test]
async fn pipelined_requests_are_all_answered_in_order() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "stateless", "")).await;
    let mut bytes = Vec::new();
    for id in 1..=3 {
        bytes.extend(Request::tools_call("/mcp", id, "whoami").head_bytes(gw.addr));
        bytes.extend(Request::tools_call("/mcp", id, "whoami").body);
    }
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    stream.write_all(&bytes).await.unwrap();
    let mut reader = BufReader::new(stream);
    for id in 1..=3 {
        let (head, body) = response(&mut reader, Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("no answer to request {id}"));
        assert_eq!(head.status, 200);
        assert_eq!(json(&body)["id"], id);
    }
}

#[tokio::test]
async fn other_methods_on_a_session_route_get_405_with_allow() {
    let backend = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&config(&backend, "stateful", "")).await;
    for method in ["PUT", "PATCH"] {
        let resp = Request::bare(method, "/mcp").send(gw.addr).await;
        assert_eq!(resp.status(), 405, "{method}");
        assert_eq!(resp.head.header("allow"), Some("GET, POST, DELETE"));
        assert_eq!(resp.json()["error"]["code"], -32029);
    }
}
