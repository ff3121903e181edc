//! Integration-test support for mcp-gateway: a raw HTTP/1.1 client (so tests can send exactly
//! the bytes they mean, bad ones included), mock MCP servers with fault injection, and a
//! harness that runs the real gateway binary and the real Python MCP SDK peers on 127.0.0.1.
#![forbid(unsafe_code)]

pub mod auth;
pub mod bridge;
pub mod browser;
pub mod client;
pub mod conformance;
pub mod dns;
pub mod elicit;
pub mod harness;
pub mod interceptor_mock;
pub mod interop;
pub mod logs;
pub mod machine;
pub mod mock;
pub mod otlp;
pub mod ports;
pub mod redis;
pub mod redis_ha;
pub mod rr_proxy;
pub mod tasks;
pub mod ticker;
pub mod wire;

pub use client::{Request, Response};
pub use harness::{Gateway, PythonPeer, ReplClient};
pub use mock::{MockServer, PortClaim};
pub use ports::{free_port, DeadAddr};

#[doc(hidden)]
pub use tokio as __tokio;

/// Polls a condition (an expression that may `.await`) every 20 ms until it holds; past
/// `timeout`, fails with the message, the condition's text and how long it waited. For the
/// state a test waits for before it asserts (a call in flight at the backend, a stream
/// counted, a health check's verdict), instead of a sleep that hopes it is long enough.
///
/// `assert_eventually!(Duration::from_secs(5), mock.in_flight() == 1, "the call reached {}", mock.name)`
#[macro_export]
macro_rules! assert_eventually {
    ($timeout:expr, $cond:expr, $($msg:tt)+) => {{
        let timeout: ::std::time::Duration = $timeout;
        let started = ::std::time::Instant::now();
        while !($cond) {
            if started.elapsed() >= timeout {
                panic!(
                    "not settled in {:?}: {} (waited for `{}`)",
                    timeout,
                    format!($($msg)+),
                    stringify!($cond)
                );
            }
            $crate::__tokio::time::sleep(::std::time::Duration::from_millis(20)).await;
        }
    }};
}

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

/// Opens a legacy (2025-11-25) session through the gateway at `addr` on `/mcp` the way the SDKs
/// do (`initialize`, then `notifications/initialized`); returns the gateway's session id.
pub async fn open_session(addr: std::net::SocketAddr) -> String {
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let resp = Request::post("/mcp", body).send(addr).await;
    assert_eq!(
        resp.status(),
        200,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    let sid = resp
        .head
        .header("mcp-session-id")
        .expect("a gateway session id")
        .to_owned();
    let note = Request::post(
        "/mcp",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .header("Mcp-Session-Id", &sid)
    .header("MCP-Protocol-Version", "2025-11-25");
    assert_eq!(note.send(addr).await.status(), 202);
    sid
}
