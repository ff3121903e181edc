//! Integration-test support for mcp-gateway: a raw HTTP/1.1 client (so tests can send exactly
//! the bytes they mean, bad ones included), mock MCP servers with fault injection, and a
//! harness that runs the real gateway binary and the real Python MCP SDK peers on 127.0.0.1.
#![forbid(unsafe_code)]

pub mod client;
pub mod dns;
pub mod harness;
pub mod mock;
pub mod wire;

pub use client::{Request, Response};
pub use harness::{free_port, Gateway, PythonPeer, ReplClient};
pub use mock::MockServer;

/// Polls `cond` every 20 ms until it holds or `timeout` passes; panics with `what` on timeout.
pub async fn eventually(what: &str, timeout: std::time::Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "not settled in {timeout:?}: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Like [`eventually`], for conditions that need to await (an admin endpoint, a metric).
pub async fn eventually_async<F, Fut>(what: &str, timeout: std::time::Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + timeout;
    while !cond().await {
        assert!(
            std::time::Instant::now() < deadline,
            "not settled in {timeout:?}: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
