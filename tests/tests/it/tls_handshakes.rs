//! TLS handshakes on the client listener (`listen-tls`) are bounded like the rest of a
//! connection: a connection is admitted against `limits.max-connections` before its handshake
//! (one still handshaking counts, and one over the bound is closed without a handshake), and
//! the handshake must end within `client-timeouts.header-s` (pingora's listener gave every
//! handshake 60 s, before any bound).

use mcp_gateway_tests::harness::workspace;
use mcp_gateway_tests::{assert_eventually, Gateway, MockServer};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

fn tls(name: &str) -> PathBuf {
    workspace().join("tests/fixtures/tls").join(name)
}

fn config(backend: &MockServer, extra: &str) -> String {
    format!(
        "{extra}listen-tls: {{ cert: {}, key: {} }}\npools: {{ p: {{ backends: [{}] }} }}\nroutes: [ {{ path: /mcp, pool: p, mode: stateless }} ]\n",
        tls("server.crt").display(),
        tls("server.key").display(),
        backend.addr
    )
}

/// Whether a real TLS client (Node's) completes a handshake with the listener at `port` and
/// verifies its certificate against the test CA.
async fn handshake_verifies(port: u16) -> bool {
    let script = r#"
const tls = require("tls"), fs = require("fs");
const [port, ca] = process.argv.slice(1);
const s = tls.connect({ host: "127.0.0.1", port: Number(port), servername: "localhost", ca: fs.readFileSync(ca) }, () => {
  console.log(JSON.stringify({ authorized: s.authorized }));
  s.end();
});
s.on("error", (e) => console.log(JSON.stringify({ error: String(e) })));
"#;
    let out = tokio::process::Command::new(mcp_gateway_tests::harness::node())
        .args([
            "-e",
            script,
            &port.to_string(),
            &tls("ca.crt").to_string_lossy(),
        ])
        .output()
        .await
        .expect("node");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["authorized"] == true
}

/// How long the gateway took to close `stream` (EOF or reset), if it did within `limit`.
async fn closed_after(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test]
async fn a_tls_handshake_must_end_within_the_header_timeout() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(&backend, "client-timeouts: { header-s: 1 }\n")).await;
    // connected, no ClientHello: the handshake never starts
    let mut silent = TcpStream::connect(gw.addr).await.unwrap();
    let closed = closed_after(&mut silent, Duration::from_secs(10)).await;
    let closed = closed.expect("a silent TLS connection still open after 10 s");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");
    assert!(
        handshake_verifies(gw.addr.port()).await,
        "a real handshake still succeeds"
    );
}

#[tokio::test]
async fn a_connection_counts_against_max_connections_while_it_handshakes() {
    let backend = MockServer::start("b").await;
    let gw = Gateway::start(&config(
        &backend,
        "limits: { max-connections: 2, max-connections-per-client: 2 }\n",
    ))
    .await;
    // two connections that never start their handshake
    let mut silent = Vec::new();
    for _ in 0..2 {
        silent.push(TcpStream::connect(gw.addr).await.unwrap());
    }
    assert_eventually!(
        Duration::from_secs(10),
        gw.metric("mcpgw_client_connections").await == 2.0,
        "the 2 handshaking connections admitted"
    );
    // a third is closed at once, without a handshake (a plain-text answer would be unreadable)
    let mut over = TcpStream::connect(gw.addr).await.unwrap();
    let closed = closed_after(&mut over, Duration::from_secs(5)).await;
    assert!(
        closed.is_some(),
        "the connection over the bound is still open"
    );
    assert_eq!(
        gw.metric(r#"mcpgw_rejections_total{reason="connections"}"#)
            .await,
        1.0
    );
    // one leaves: its slot comes back for a real handshake
    drop(silent.pop());
    assert_eventually!(
        Duration::from_secs(10),
        handshake_verifies(gw.addr.port()).await,
        "a handshake once a slot came back"
    );
}
