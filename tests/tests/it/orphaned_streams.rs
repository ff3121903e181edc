//! Issue 15 row 4: GET streams whose clients went away. Before, such a stream kept its
//! `max-streams` slot and its upstream connections until the upstream read timeout (300 s by
//! default): the gateway only noticed the client when it next wrote an event. Now a client
//! that closes its connection frees its slot at once, and a held stream nobody reads is closed
//! upstream at the end of the resume window. The backend is the real FastMCP 1.30.0 server,
//! whose idle GET stream carries nothing (a backend sending keep-alives would have let the old
//! code notice the client at its next write).

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
