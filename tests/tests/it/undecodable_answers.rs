//! An answer the gateway must read itself (a list it filters on a route with `authz` rules) in
//! a content coding it cannot decode (`Content-Encoding: br`, which it never asks for, or a
//! corrupt gzip body) gets the answer docs/errors.md promises for an answer that cannot be
//! used, the "lost mid-answer" one: 200 with JSON-RPC -32013 and the request's id, never the
//! list unfiltered, never 500 -32019 (issue 31, item 13), and no ERROR line in the log.

use mcp_gateway_tests::auth::{auth_yaml, token, RESOURCE};
use mcp_gateway_tests::harness::unique_temp_path;
use mcp_gateway_tests::wire::{read_body, read_head};
use mcp_gateway_tests::{assert_eventually, logs, Gateway, Request};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// A legacy MCP server that opens sessions and answers `tools/list` in the coding `coding`
/// with the body `listed` (any other call: a plain JSON result).
async fn backend(coding: &'static str, listed: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, coding, listed));
        }
    });
    addr
}

async fn serve(stream: TcpStream, coding: &'static str, listed: &'static [u8]) {
    let mut reader = BufReader::new(stream);
    while let Ok(Some(head)) = read_head(&mut reader, true).await {
        let Ok(body) = read_body(&mut reader, &head, true).await else {
            return;
        };
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or("");
        let id = request["id"].clone();
        let sid = head.header("mcp-session-id");
        let (status, extra, body): (u16, String, Vec<u8>) = match (method, sid) {
            ("initialize", None) => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "coded", "version": "1"}}});
                (
                    200,
                    "mcp-session-id: coded-1\r\n".into(),
                    answer.to_string().into_bytes(),
                )
            }
            (_, None) => {
                let refused = json!({"jsonrpc": "2.0", "id": "server-error",
                    "error": {"code": -32600, "message": "Bad Request: Missing session ID"}});
                (400, String::new(), refused.to_string().into_bytes())
            }
            (_, Some(_)) if id.is_null() => (202, String::new(), Vec::new()),
            ("tools/list", Some(_)) => (
                200,
                format!("content-encoding: {coding}\r\n"),
                listed.to_vec(),
            ),
            (_, Some(_)) => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "coded"}], "isError": false}});
                (200, String::new(), answer.to_string().into_bytes())
            }
        };
        let out = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n",
            body.len()
        );
        let stream = reader.get_mut();
        if stream.write_all(out.as_bytes()).await.is_err() || stream.write_all(&body).await.is_err()
        {
            return;
        }
    }
}

const RULES: &str = "    authz:\n      - { match: { method: tools/call, name: \"admin_*\" }, require: { scope: admin } }\n";

async fn list_through(coding: &'static str, listed: &'static [u8]) {
    let addr = backend(coding, listed).await;
    let log = unique_temp_path("mcpgw-undecodable-log");
    let gw = Gateway::start_logging_to(
        &format!(
            "{}pools:\n  p: {{ backends: [{addr}] }}\nroutes:\n  - path: /mcp\n    mode: stateful\n    pool: p\n{RULES}",
            auth_yaml(RESOURCE)
        ),
        &[("RUST_LOG", "info,mcp_gateway::access=debug")],
        &log,
    )
    .await;
    let bearer = format!("Bearer {}", token("alice", "tools"));
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let opened = Request::post("/mcp", init)
        .header("Authorization", &bearer)
        .send(gw.addr)
        .await;
    assert_eq!(opened.status(), 200, "{}", opened.text());
    let sid = opened
        .head
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    let send = |body: &'static str| {
        let req = Request::post("/mcp", body)
            .header("Authorization", &bearer)
            .header("Mcp-Session-Id", &sid)
            .header("MCP-Protocol-Version", "2025-11-25")
            .header("Accept-Encoding", "gzip, br");
        async move { req.send(gw.addr).await }
    };
    let listed = send(r#"{"jsonrpc":"2.0","id":"list-1","method":"tools/list"}"#).await;
    assert_eq!(listed.status(), 200, "{coding}: {}", listed.text());
    let v = listed.json();
    assert_eq!(v["id"], "list-1", "{coding}: {v}");
    assert_eq!(v["error"]["code"], -32013, "{coding}: {v}");
    assert_eq!(v["error"]["data"]["pool"], "p", "{coding}: {v}");
    assert!(
        listed.head.header("content-encoding").is_none(),
        "{coding}: the gateway's own answer is not coded"
    );
    // the session goes on: the next call is answered
    let called =
        send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami"}}"#).await;
    assert_eq!(called.status(), 200, "{coding}: {}", called.text());
    // pingora writes its error record before the access line: once the list's access line is
    // there, an ERROR for it would be too
    assert_eventually!(
        Duration::from_secs(10),
        logs::read(&log)
            .iter()
            .any(|l| l.message == "request" && l.raw.contains("tools/list")),
        "the list's access line"
    );
    let loud = logs::above_info(&log);
    assert!(
        loud.iter().all(|l| l.level != "ERROR"),
        "{coding}: {}",
        logs::show(&loud)
    );
}

#[tokio::test]
async fn a_list_in_a_coding_the_gateway_cannot_decode_is_answered_as_lost_mid_answer() {
    list_through("br", b"\x1b\x0b\x00\xf8\xa5\x40\x42\x1e").await;
}

#[tokio::test]
async fn a_corrupt_gzip_list_is_answered_as_lost_mid_answer() {
    list_through("gzip", b"\x1f\x8b\x08\x00not really gzip at all").await;
}
