//! The gateway-wide bound on client connections (`limits.max-connections`): each open
//! connection holds buffers and a task whether or not it sends anything (4,000 half-open ones
//! cost about 360 MB), so past the bound a new connection is answered at once with 503 -32018
//! (`data.reason: "connections"`, `Retry-After`), written before its request is read, and
//! closed. Connections are counted from accept to close, keep-alive included.

use crate::error::GatewayError;
use crate::mcp::RequestId;
use pingora::protocols::Stream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// The connections open now.
#[derive(Debug, Default)]
pub struct Open(Arc<AtomicUsize>);

/// One counted connection; uncounted on drop.
pub struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Open {
    /// Counts a new connection, unless `limit` connections are open already.
    pub fn admit(&self, limit: Option<usize>) -> Option<Held> {
        let now = self.0.fetch_add(1, Ordering::Relaxed);
        let held = Held(self.0.clone());
        match limit {
            Some(max) if now >= max => None,
            _ => Some(held),
        }
    }

    /// How many are open.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// The answer to a connection over the bound: the whole HTTP response, then the close.
pub fn refusal(limit: usize) -> Vec<u8> {
    let error = GatewayError::overloaded("gateway", "connections", limit);
    let (status, headers, body) = error.to_http(&RequestId::null());
    let mut out = format!("HTTP/1.1 {status} Service Unavailable\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    bytes
}

/// Writes the refusal (within a second: a client that does not read is not waited for) and
/// closes the connection.
pub async fn refuse(mut stream: Stream, limit: usize) {
    let bytes = refusal(limit);
    let write = async {
        let _ = stream.write_all(&bytes).await;
        let _ = stream.flush().await;
        let _ = stream.shutdown().await;
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), write).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_over_the_bound_are_refused_and_slots_come_back() {
        let open = Open::default();
        let a = open.admit(Some(2)).expect("first");
        let _b = open.admit(Some(2)).expect("second");
        assert!(open.admit(Some(2)).is_none(), "third refused");
        assert_eq!(open.count(), 2, "a refused one is not counted");
        drop(a);
        assert!(open.admit(Some(2)).is_some());
        assert!(open.admit(None).is_some(), "no limit");
    }

    #[test]
    fn the_refusal_is_a_json_rpc_error_with_its_length() {
        let text = String::from_utf8(refusal(7)).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains("connection: close"));
        assert!(head.to_ascii_lowercase().contains("retry-after"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], -32018);
        assert_eq!(v["error"]["data"]["reason"], "connections");
        assert_eq!(v["error"]["data"]["limit"], 7);
        assert_eq!(v["id"], serde_json::Value::Null);
    }
}
