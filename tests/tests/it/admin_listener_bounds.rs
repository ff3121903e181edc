//! The admin listener's bounds on what a client may hold: a request head must come whole
//! within `client-timeouts.header-s` of its first byte and stay within 64 KiB and 100 lines
//! (else 408 -32028 or 431 -32027, a JSON-RPC error, and the connection closed), and at most
//! 64 connections are open at once, 32 of them from one client address (one more is answered
//! 503 -32018 and closed). Raw TCP: the pace and the size of the bytes are the point.

use mcp_gateway_tests::wire::closed_within;
use mcp_gateway_tests::wire::response;
use mcp_gateway_tests::{Gateway, MockServer, Request};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn config(backend: &MockServer, extra: &str) -> String {
    format!(
        "{extra}pools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n",
        backend.addr
    )
}

/// The answer's status and JSON body, read within `wait` (`None`: nothing came).
async fn answer(
    reader: &mut BufReader<TcpStream>,
    wait: Duration,
) -> Option<(u16, serde_json::Value)> {
    let (head, body) = response(reader, wait).await?;
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    Some((head.status, json))
}

#[tokio::test]
async fn an_admin_request_head_over_64_kib_is_refused_431_and_the_connection_closed() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "")).await;
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\nX-Big: {}\r\n\r\n",
        gw.admin,
        "a".repeat(1 << 20)
    );
    let mut stream = TcpStream::connect(gw.admin).await.unwrap();
    let _ = stream.write_all(big.as_bytes()).await;
    let mut reader = BufReader::new(stream);
    let (status, body) = answer(&mut reader, Duration::from_secs(5))
        .await
        .expect("an answer to the 1 MiB head");
    assert_eq!(status, 431, "{body}");
    assert_eq!(body["error"]["code"], -32027, "{body}");
    assert_eq!(body["error"]["data"]["kind"], "head-too-large");
    let mut stream = reader.into_inner();
    assert!(closed_within(&mut stream, Duration::from_secs(2)).await);
    // 101 header lines, each small, are refused the same way
    let lines = format!(
        "GET /healthz HTTP/1.1\r\nHost: {}\r\n{}\r\n",
        gw.admin,
        "X-A: b\r\n".repeat(101)
    );
    let mut stream = TcpStream::connect(gw.admin).await.unwrap();
    let _ = stream.write_all(lines.as_bytes()).await;
    let mut reader = BufReader::new(stream);
    let (status, body) = answer(&mut reader, Duration::from_secs(5))
        .await
        .expect("an answer to 101 lines");
    assert_eq!(status, 431, "{body}");
    assert_eq!(body["error"]["code"], -32027, "{body}");
}

#[tokio::test]
async fn an_admin_request_head_trickled_past_the_header_timeout_is_cut_off_at_the_deadline() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "client-timeouts: { header-s: 1 }\n")).await;
    let stream = TcpStream::connect(gw.admin).await.unwrap();
    let (read, mut write) = stream.into_split();
    let admin = gw.admin;
    let trickle = tokio::spawn(async move {
        let start = format!("GET /healthz HTTP/1.1\r\nHost: {admin}\r\n");
        let _ = write.write_all(start.as_bytes()).await;
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
        let _ = write.write_all(b"\r\n").await;
    });
    let mut reader = BufReader::new(read);
    let started = Instant::now();
    // the whole head would take 8 s; the deadline is 1 s after its first byte
    let (head, body) = response(&mut reader, Duration::from_secs(4))
        .await
        .expect("the head cut off at its deadline, not answered at its end");
    let waited = started.elapsed();
    let body: serde_json::Value = serde_json::from_slice(&body).expect("a JSON-RPC error");
    assert_eq!(head.status, 408, "{body}");
    assert_eq!(body["error"]["code"], -32028, "{body}");
    assert_eq!(body["error"]["data"]["kind"], "client-timeout");
    assert!(waited < Duration::from_secs(4), "cut off after {waited:?}");
    trickle.abort();
}

/// A connection from the loopback address `source` to `to`, which has been answered one
/// request and is kept alive (so the listener has counted it).
async fn held_from(source: &str, to: SocketAddr) -> BufReader<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source"))
        .expect("bind the source address");
    let mut stream = socket.connect(to).await.expect("connect");
    Request::bare("GET", "/healthz")
        .write_to(&mut stream, to)
        .await
        .expect("write");
    let mut reader = BufReader::new(stream);
    let (head, _) = response(&mut reader, Duration::from_secs(5))
        .await
        .expect("healthz answered");
    assert_eq!(head.status, 200);
    reader
}

/// What a new connection from `source` is answered before it sends anything, within 5 s.
async fn refusal_from(source: &str, to: SocketAddr) -> Option<(u16, serde_json::Value)> {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source"))
        .expect("bind the source address");
    let stream = socket.connect(to).await.expect("connect");
    answer(&mut BufReader::new(stream), Duration::from_secs(5)).await
}

#[tokio::test]
async fn admin_connections_past_32_from_one_client_or_64_in_all_are_answered_503() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "")).await;
    let mut held = Vec::new();
    for _ in 0..32 {
        held.push(held_from("127.0.0.1", gw.admin).await);
    }
    let (status, body) = refusal_from("127.0.0.1", gw.admin)
        .await
        .expect("the 33rd connection from one address is refused at once");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], -32018, "{body}");
    assert_eq!(body["error"]["data"]["scope"], "client", "{body}");
    for i in 0..32 {
        held.push(held_from(&format!("127.0.0.{}", 2 + i % 4), gw.admin).await);
    }
    let (status, body) = refusal_from("127.0.0.9", gw.admin)
        .await
        .expect("the 65th connection is refused at once");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], -32018, "{body}");
    assert_eq!(body["error"]["data"]["reason"], "connections", "{body}");
    assert_eq!(body["error"]["data"]["limit"], 64, "{body}");
    drop(held.pop());
    // (127.0.0.1 still holds its 32: another address)
    let other = "127.0.0.9".parse().expect("an address");
    mcp_gateway_tests::assert_eventually!(
        Duration::from_secs(5),
        Request::bare("GET", "/healthz")
            .send_from(gw.admin, other)
            .await
            .status()
            == 200,
        "a closed connection makes room"
    );
}
