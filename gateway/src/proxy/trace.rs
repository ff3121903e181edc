//! Request ids: the client's `X-Request-Id` when it sends a usable one, else one the gateway
//! makes (a per-process random prefix and a counter: unique, cheap, no clock). The id is set on
//! the request itself, so every upstream request made for it carries it.

use pingora::http::RequestHeader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The header carrying the request id.
pub const REQUEST_ID: &str = "x-request-id";

/// Returns the request's id, adding a fresh one to the request when it has none.
pub fn request_id(req: &mut RequestHeader) -> String {
    let given = req
        .headers
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128);
    if let Some(id) = given {
        return id.to_owned();
    }
    static PREFIX: OnceLock<u32> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(rand::random);
    let id = format!("{prefix:08x}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed));
    let _ = req.insert_header(REQUEST_ID, id.as_str());
    id
}
