//! Health probes against small loopback backends: plain and TLS, with answers that arrive in
//! pieces.

use super::probe;
use crate::config::{parse, HealthCheck};
use crate::upstream::client::UpstreamClient;
use crate::upstream::Pool;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/tls")
        .join(name)
}

fn check() -> HealthCheck {
    HealthCheck {
        path: Some("/mcp".into()),
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(2),
        fall: 1,
        rise: 1,
    }
}

/// A pool of the one backend at `addr`, with `extra` pool settings (`tls: ...`).
fn pool(addr: std::net::SocketAddr, extra: &str) -> Arc<Pool> {
    let yaml = format!(
        "pools: {{ p: {{ backends: [{addr}]{extra} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
    );
    Arc::new(Pool::new(&parse(&yaml).unwrap().pools[0]))
}

/// Reads a request head, then writes `pieces` with a pause between them.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, pieces: &[&[u8]]) {
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    for piece in pieces {
        if stream.write_all(piece).await.is_err() {
            return;
        }
        let _ = stream.flush().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let _ = stream.shutdown().await;
}

/// A plaintext backend answering every connection with `pieces`.
async fn plain_backend(pieces: &'static [&'static [u8]]) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(answer(stream, pieces));
        }
    });
    addr
}

/// A backend serving TLS with the test certificate, answering with `pieces`.
async fn tls_backend(pieces: &'static [&'static [u8]]) -> std::net::SocketAddr {
    use pingora::tls::{ServerConfig, TlsAcceptor};
    let cert =
        crate::downstream::tls::ReloadingCert::new(&fixture("server.crt"), &fixture("server.key"))
            .unwrap();
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(cert);
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(stream).await {
                    answer(tls, pieces).await;
                }
            });
        }
    });
    addr
}

const OK: &[&[u8]] = &[b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"];

#[tokio::test]
async fn a_tls_pool_is_probed_over_tls() {
    let addr = tls_backend(OK).await;
    let tls = format!(
        ", tls: {{ ca: {}, sni: backend.internal }}",
        fixture("ca.crt").display()
    );
    let p = pool(addr, &tls);
    assert!(probe(&UpstreamClient::default(), &p, &p.backends()[0], &check()).await);
}

#[tokio::test]
async fn a_status_line_that_arrives_in_pieces_is_read_whole() {
    const SPLIT_OK: &[&[u8]] = &[b"HTTP/1.1", b" 200 OK\r\n", b"content-length: 0\r\n\r\n"];
    const SPLIT_DOWN: &[&[u8]] = &[
        b"HTTP/1.1",
        b" 503 Unavailable\r\n",
        b"content-length: 0\r\n\r\n",
    ];
    let up = plain_backend(SPLIT_OK).await;
    let p = pool(up, "");
    assert!(
        probe(&UpstreamClient::default(), &p, &p.backends()[0], &check()).await,
        "a 200 in pieces is alive"
    );
    let down = plain_backend(SPLIT_DOWN).await;
    let p = pool(down, "");
    assert!(
        !probe(&UpstreamClient::default(), &p, &p.backends()[0], &check()).await,
        "a 503 in pieces is down"
    );
}

#[tokio::test]
async fn a_plain_pool_answering_below_500_is_alive() {
    const LEGACY_400: &[&[u8]] = &[b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n"];
    let addr = plain_backend(LEGACY_400).await;
    let p = pool(addr, "");
    assert!(probe(&UpstreamClient::default(), &p, &p.backends()[0], &check()).await);
}

/// The running state's pools, for a round of the service.
struct Pools(crate::config::PoolConfig, Arc<Pool>);

impl crate::upstream::LivePools for Pools {
    fn pools(&self) -> Vec<(crate::config::PoolConfig, Arc<Pool>)> {
        vec![(self.0.clone(), self.1.clone())]
    }
    fn mcp_path(&self, _: usize) -> String {
        "/mcp".into()
    }
}

#[tokio::test]
async fn a_backend_the_checks_mark_down_is_announced_dead_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let yaml = format!(
        "pools: {{ p: {{ backends: [127.0.0.1:{port}], health: {{ fall: 1, timeout-ms: 500 }} }} }}\nroutes: [ {{ path: /mcp, pool: p }} ]\n"
    );
    let cfg = parse(&yaml).unwrap().pools[0].clone();
    let pool = Arc::new(Pool::new(&cfg));
    let deaths = crate::upstream::deaths::Deaths::default();
    let mut heard = deaths.subscribe();
    let service = super::HealthService::new(Arc::new(Pools(cfg, pool.clone()))).announcing(deaths);
    service.round().await;
    service.round().await; // still down: no second death
    let death = heard.try_recv().expect("announced");
    assert_eq!((death.backend.port(), death.cause), (port, "probe"));
    assert!(heard.try_recv().is_err());
    assert!(pool.backends()[0].is_failed());
}
