//! Every request head is judged as pingora parses it, not only a connection's first: a
//! kept-alive connection's next request, one sent after blank lines (which HTTP parsers skip
//! before a request line), and one pipelined behind the previous request's body, in the same
//! write or split across writes anywhere. Each must be whole within `client-timeouts.header-s`,
//! within 64 KiB and 100 lines, and frame its body unambiguously; a refusal is a JSON-RPC error
//! and the connection closes, and a refused request never reaches the backend. Legitimate
//! pipelining is never refused, wherever the client's writes split it. Raw TCP: the arrival of
//! the bytes is the point.

use mcp_gateway_tests::client::META;
use mcp_gateway_tests::wire::closed_within;
use mcp_gateway_tests::wire::{json, response};
use mcp_gateway_tests::{Gateway, MockServer};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

fn config(backend: &MockServer, extra: &str) -> String {
    format!(
        "{extra}pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        backend.addr
    )
}

/// A `tools/call` of `whoami` with id `id`, its body framed by the lines `framing` gives for
/// the body's length (each ending in CRLF).
fn call_framed(addr: SocketAddr, id: u64, framing: impl FnOnce(usize) -> String) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"whoami","arguments":{{}},{META}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: whoami\r\n{}\r\n{body}",
        framing(body.len())
    )
    .into_bytes()
}

/// A well-framed call.
fn call(addr: SocketAddr, id: u64) -> Vec<u8> {
    call_framed(addr, id, |n| format!("Content-Length: {n}\r\n"))
}

/// A connection whose first request was answered 200: its reading and writing halves.
async fn answered_once(addr: SocketAddr) -> (BufReader<OwnedReadHalf>, OwnedWriteHalf) {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (read, mut write) = stream.into_split();
    write.write_all(&call(addr, 1)).await.unwrap();
    let mut reader = BufReader::new(read);
    let (head, body) = response(&mut reader, Duration::from_secs(5))
        .await
        .expect("the first request answered");
    assert_eq!(head.status, 200, "{}", String::from_utf8_lossy(&body));
    (reader, write)
}

/// The heads a next request may not have, each with the status and JSON-RPC code it gets.
fn refused_heads(addr: SocketAddr) -> Vec<(&'static str, Vec<u8>, u16, i64)> {
    let host = format!("Host: {addr}\r\n");
    vec![
        (
            "a head over 64 KiB",
            format!(
                "POST /mcp HTTP/1.1\r\n{host}X-Big: {}\r\n\r\n",
                "a".repeat(70_000)
            )
            .into_bytes(),
            431,
            -32027,
        ),
        (
            "a head over 64 KiB that never ends (a parked partial head)",
            format!("POST /mcp HTTP/1.1\r\n{host}X-Big: {}", "a".repeat(70_000)).into_bytes(),
            431,
            -32027,
        ),
        (
            "a head of 120 lines",
            format!(
                "POST /mcp HTTP/1.1\r\n{host}{}\r\n",
                "X-A: b\r\n".repeat(120)
            )
            .into_bytes(),
            431,
            -32027,
        ),
        (
            "Content-Length and Transfer-Encoding: chunked",
            call_framed(addr, 2, |n| {
                format!("Content-Length: {n}\r\nTransfer-Encoding: chunked\r\n")
            }),
            400,
            -32026,
        ),
        (
            "a Content-Length list of one value twice",
            call_framed(addr, 2, |n| format!("Content-Length: {n}, {n}\r\n")),
            400,
            -32026,
        ),
        (
            "a header line without a colon",
            format!("POST /mcp HTTP/1.1\r\n{host}Not a header\r\nContent-Length: 0\r\n\r\n")
                .into_bytes(),
            400,
            -32026,
        ),
    ]
}

/// The JSON-RPC error code of an answer's body (0 when it is not a JSON-RPC error: pingora's
/// own bare 400 has none).
fn error_code(body: &[u8]) -> i64 {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["code"].as_i64())
        .unwrap_or_default()
}

/// Sends `bytes` and reads the answer: its status and JSON-RPC error code, and whether the
/// connection then closed.
async fn refusal(
    reader: &mut BufReader<OwnedReadHalf>,
    write: &mut OwnedWriteHalf,
    bytes: &[u8],
    what: &str,
) -> (u16, i64, bool) {
    // the gateway may answer before it has read everything (a head over the limit)
    let _ = write.write_all(bytes).await;
    let (head, body) = response(reader, Duration::from_secs(5))
        .await
        .unwrap_or_else(|| panic!("{what}: no answer"));
    let code = error_code(&body);
    let closed = closed_within(reader, Duration::from_secs(2)).await;
    (head.status, code, closed)
}

#[tokio::test]
async fn a_next_request_after_blank_lines_is_judged_as_a_first_one() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "")).await;
    for blank in ["\r\n", "\n", "\r\n\r\n\r\n"] {
        for (what, bytes, status, code) in refused_heads(gw.addr) {
            let what = format!("{blank:?} then {what}");
            let (mut reader, mut write) = answered_once(gw.addr).await;
            let mut sent = blank.as_bytes().to_vec();
            sent.extend_from_slice(&bytes);
            let got = refusal(&mut reader, &mut write, &sent, &what).await;
            assert_eq!(got, (status, code, true), "{what}: (status, code, closed)");
        }
    }
    // only the first requests reached the backend
    assert_eq!(
        backend.count_method("tools/call"),
        3 * refused_heads(gw.addr).len()
    );
}

#[tokio::test]
async fn a_request_pipelined_behind_a_body_in_the_same_write_is_judged() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "")).await;
    for (what, bytes, status, code) in refused_heads(gw.addr) {
        let stream = TcpStream::connect(gw.addr).await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut reader = BufReader::new(read);
        let mut sent = call(gw.addr, 1);
        sent.extend_from_slice(&bytes);
        let _ = write.write_all(&sent).await;
        let (head, _) = response(&mut reader, Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("{what}: the first request not answered"));
        assert_eq!(head.status, 200, "{what}: the first request");
        let (head, body) = response(&mut reader, Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("{what}: the pipelined one not answered"));
        let code_got = error_code(&body);
        let closed = closed_within(&mut reader, Duration::from_secs(2)).await;
        assert_eq!(
            (head.status, code_got, closed),
            (status, code, true),
            "{what}: (status, code, closed)"
        );
    }
    assert_eq!(
        backend.count_method("tools/call"),
        refused_heads(gw.addr).len()
    );
}

#[tokio::test]
async fn a_next_request_after_a_blank_line_must_send_its_head_within_the_header_timeout() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "client-timeouts: { header-s: 1 }\n")).await;
    let (mut reader, mut write) = answered_once(gw.addr).await;
    let trickle = tokio::spawn(async move {
        let _ = write.write_all(b"\r\nPOST /mcp HTTP/1.1\r\n").await;
        for i in 0..40 {
            if write
                .write_all(format!("X-{i}: y\r\n").as_bytes())
                .await
                .is_err()
            {
                return;
            }
            // the slow client is the behaviour under test: a header line every 200 ms
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let started = Instant::now();
    let (head, body) = response(&mut reader, Duration::from_secs(4))
        .await
        .expect("answered before the client finished its head");
    assert_eq!(head.status, 408);
    assert_eq!(json(&body)["error"]["code"], -32028);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(closed_within(&mut reader, Duration::from_secs(2)).await);
    trickle.abort();
    assert_eq!(backend.count_method("tools/call"), 1);
}

#[tokio::test]
async fn a_pipelined_head_left_partial_must_end_within_the_header_timeout() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "client-timeouts: { header-s: 1 }\n")).await;
    let stream = TcpStream::connect(gw.addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    // the first request and the start of the next, then nothing
    let mut sent = call(gw.addr, 1);
    sent.extend_from_slice(b"POST /mcp HTTP/1.1\r\nX-A: b\r\n");
    write.write_all(&sent).await.unwrap();
    let (head, _) = response(&mut reader, Duration::from_secs(5))
        .await
        .expect("the first");
    assert_eq!(head.status, 200);
    let (head, body) = response(&mut reader, Duration::from_secs(4))
        .await
        .expect("the partial head cut off");
    assert_eq!(head.status, 408);
    assert_eq!(json(&body)["error"]["code"], -32028);
    assert!(closed_within(&mut reader, Duration::from_secs(2)).await);
    drop(write);
}

#[tokio::test]
async fn two_pipelined_requests_split_anywhere_are_both_answered() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "")).await;
    let mut both = call(gw.addr, 1);
    both.extend_from_slice(&call(gw.addr, 2));
    let mut refused = Vec::new();
    for split in 1..both.len() {
        let stream = TcpStream::connect(gw.addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (read, mut write) = stream.into_split();
        let mut reader = BufReader::new(read);
        write.write_all(&both[..split]).await.unwrap();
        // the two parts arrive apart (the client's pace is the behaviour under test)
        tokio::time::sleep(Duration::from_millis(2)).await;
        write.write_all(&both[split..]).await.unwrap();
        for id in 1..=2 {
            let answer = response(&mut reader, Duration::from_secs(5)).await;
            let status = answer.as_ref().map(|(h, _)| h.status);
            if status != Some(200) {
                refused.push((split, id, status));
                break;
            }
        }
    }
    assert!(
        refused.is_empty(),
        "{} of {} split points refused: (split, request, status) {:?}",
        refused.len(),
        both.len() - 1,
        &refused[..refused.len().min(10)]
    );
}

#[tokio::test]
async fn many_connections_parking_partial_heads_are_each_refused_at_the_limit() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "")).await;
    let (mut parked, mut writers) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        let (reader, mut write) = answered_once(gw.addr).await;
        // a head that never ends, past 64 KiB, after a blank line
        let head = format!("\r\nPOST /mcp HTTP/1.1\r\nX-Big: {}", "a".repeat(200_000));
        writers.push(tokio::spawn(async move {
            let _ = write.write_all(head.as_bytes()).await;
            // held open: the gateway, not the client, ends it
            std::future::pending::<()>().await;
        }));
        parked.push(reader);
    }
    for (i, reader) in parked.iter_mut().enumerate() {
        let (head, body) = response(reader, Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("connection {i}: held without an answer"));
        assert_eq!(head.status, 431, "connection {i}");
        assert_eq!(json(&body)["error"]["code"], -32027, "connection {i}");
        assert!(
            closed_within(reader, Duration::from_secs(2)).await,
            "connection {i}"
        );
    }
    for w in writers {
        w.abort();
    }
}
