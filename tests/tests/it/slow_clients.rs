//! Slow clients at the listener (issue 15): a request head or body sent slower than its
//! client timeout, or a kept-alive connection left idle, is cut off with its JSON-RPC error
//! (408) and the connection closed, without holding a connection open or reaching a backend.
//! Raw TCP: the pace of the bytes is the point.

use mcp_gateway_tests::wire::closed_within;
use mcp_gateway_tests::wire::{json, read_head, response};
use mcp_gateway_tests::{Gateway, MockServer, Request};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn config(backend: &MockServer, mode: &str, extra: &str) -> String {
    format!(
        "{extra}pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: {mode} }} ]\n",
        backend.addr
    )
}

#[tokio::test]
async fn a_request_head_sent_a_byte_at_a_time_is_cut_off_after_the_header_timeout() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(
        &backend,
        "stateless",
        "client-timeouts: { header-s: 1 }\n",
    ))
    .await;
    let stream = TcpStream::connect(gw.addr).await.unwrap();
    let (read, mut write) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let _ = write.write_all(b"POST /mcp HTTP/1.1\r\n").await;
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
    let mut reader = BufReader::new(read);
    let started = Instant::now();
    let head = tokio::time::timeout(Duration::from_secs(4), read_head(&mut reader, false))
        .await
        .expect("answered before the client finished its head")
        .unwrap()
        .unwrap();
    assert_eq!(head.status, 408);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    trickle.abort();
    assert_eq!(backend.count(), 0);
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_idle_timeout() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(
        &backend,
        "stateless",
        "client-timeouts: { idle-s: 1 }\n",
    ))
    .await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    Request::tools_call("/mcp", 1, "whoami")
        .write_to(&mut stream, gw.addr)
        .await
        .unwrap();
    let mut reader = BufReader::new(stream);
    let (head, _) = response(&mut reader, Duration::from_secs(5))
        .await
        .expect("an answer");
    assert_eq!(head.status, 200);
    let mut stream = reader.into_inner();
    assert!(
        closed_within(&mut stream, Duration::from_secs(3)).await,
        "still open when idle"
    );
}

#[tokio::test]
async fn a_body_trickled_slower_than_the_body_timeout_is_cut_off() {
    let backend = MockServer::legacy("l", 0, "2025-11-25").await;
    let gw = Gateway::start(&config(
        &backend,
        "stateful",
        "client-timeouts: { body-s: 1 }\n",
    ))
    .await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        gw.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let (head, body) = response(&mut reader, Duration::from_secs(4))
        .await
        .expect("answered before the client finished its body");
    assert_eq!(head.status, 408);
    assert_eq!(json(&body)["error"]["code"], -32028);
    let mut stream = reader.into_inner();
    assert!(closed_within(&mut stream, Duration::from_secs(2)).await);
}
