//! Issue 15 row 4: GET streams whose clients went away. Before, such a stream kept its
//! `max-streams` slot and its upstream connections until the upstream read timeout (300 s by
//! default): the gateway only noticed the client when it next wrote an event. Now a client
//! that closes its connection frees its slot at once, and a held stream nobody reads is closed
//! upstream at the end of the resume window. The backend is the real FastMCP 1.30.0 server,
//! whose idle GET stream carries nothing (a backend sending keep-alives would have let the old
//! code notice the client at its next write). A sessionless GET relayed from a raw backend
//! whose SSE stream stays quiet frees its slot and upstream connection the same way.

use mcp_gateway_tests::{assert_eventually, open_session, Gateway, PythonPeer, Request};
use std::time::Duration;
use tokio::io::AsyncReadExt;

fn config(server: &PythonPeer, max_streams: usize, window_s: u64) -> String {
    format!(
        "sessions:\n  resume: {{ window-s: {window_s} }}\npools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateful, limits: {{ max-streams: {max_streams} }} }} ]\n",
        server.addr()
    )
}

/// Opens a GET stream on a raw connection and returns it once the head arrived.
async fn open_stream(gw: &Gateway, sid: &str) -> tokio::net::TcpStream {
    let mut conn = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    Request::session_stream(sid)
        .header("MCP-Protocol-Version", "2025-11-25")
        .write_to(&mut conn, gw.addr)
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(3), conn.read(&mut buf))
        .await
        .expect("the stream's head")
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    conn
}

#[tokio::test]
async fn clients_that_close_their_streams_give_their_slots_back_at_once() {
    // FastMCP 1.30.0 writes nothing on an idle GET stream (no keep-alives), as in the report
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&config(&server, 4, 60)).await;
    let mut clients = Vec::new();
    for _ in 0..4 {
        let sid = open_session(gw.addr).await;
        clients.push((open_stream(&gw, &sid).await, sid));
    }
    assert_eq!(gw.metric("mcpgw_open_streams").await, 4.0);
    let sid = open_session(gw.addr).await;
    let refused = Request::session_stream(&sid).send(gw.addr).await;
    assert_eq!(refused.status(), 503, "the cap holds while they read");
    // every client goes away without a word; nothing is written to them meanwhile
    let sids: Vec<String> = clients
        .drain(..)
        .map(|(conn, sid)| {
            drop(conn);
            sid
        })
        .collect();
    assert_eventually!(
        Duration::from_secs(2),
        gw.metric("mcpgw_open_streams").await == 0.0,
        "the slots were given back"
    );
    let _kept = open_stream(&gw, &sid).await;
    assert_eq!(gw.metric("mcpgw_open_streams").await, 1.0);
    drop(sids);
}

#[tokio::test]
async fn a_held_stream_nobody_reads_is_closed_upstream_after_the_window() {
    // FastMCP 1.30.0 writes nothing on an idle GET stream (no keep-alives), as in the report
    let server = PythonPeer::legacy_v1("pod-0", 0).await;
    let gw = Gateway::start(&config(&server, 10, 1)).await;
    let sid = open_session(gw.addr).await;
    let conn = open_stream(&gw, &sid).await;
    assert_eq!(gw.metric("mcpgw_held_streams").await, 1.0);
    drop(conn);
    // 1 s without a reader: the gateway gives the backend its connection back
    assert_eventually!(
        Duration::from_secs(5),
        gw.metric("mcpgw_held_streams").await == 0.0,
        "the unread held stream was closed"
    );
    // the session goes on; its next GET opens the stream again
    let _again = open_stream(&gw, &sid).await;
    assert_eventually!(
        Duration::from_secs(2),
        gw.metric("mcpgw_held_streams").await == 1.0,
        "reopened"
    );
}

#[tokio::test]
async fn a_closed_sessionless_get_frees_its_stream_slot_and_upstream_connection_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A backend that answers every GET with an SSE stream on which it never writes, and counts
    // the connections the gateway closes.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let closed = Arc::new(AtomicUsize::new(0));
    let counter = closed.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
                    .await;
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
                counter.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    let gw = Gateway::start(&format!(
        "limits: {{ max-streams: 2 }}\npools: {{ p: {{ backends: [{addr}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: auto }} ]\n"
    ))
    .await;
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
        gw.addr
    );
    for i in 0..4 {
        let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
        s.write_all(get.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(3), s.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("GET {i}: no answer head"))
            .unwrap();
        let head = String::from_utf8_lossy(&buf[..n]);
        assert!(
            head.starts_with("HTTP/1.1 200"),
            "GET {i}: a slot was still held: {head}"
        );
        drop(s);
        let want = i + 1;
        assert_eventually!(
            Duration::from_secs(3),
            closed.load(Ordering::SeqCst) >= want,
            "GET {i}: the upstream stream of a client that left is closed"
        );
        // the event the next GET needs: the request ended and gave its slot back (the gauge
        // falls once the slot is free); waiting on the upstream close alone raced with it
        let mut open = f64::MAX;
        for _ in 0..300 {
            open = gw.metric("mcpgw_open_streams{route=\"/mcp\"}").await;
            if open == 0.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await; // the poll interval
        }
        assert_eq!(open, 0.0, "GET {i}: the stream's slot is given back");
    }
}
