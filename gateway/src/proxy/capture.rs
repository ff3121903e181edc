//! The proxy's side of request capture: at the end of a request (the `logging` phase), what
//! the context kept becomes a [`Seen`] for the route's capture file. Nothing here runs while a
//! body moves.

use crate::capture::{Captures, Seen};
use crate::request::ctx::RequestCtx;
use mcp_wire::headers::{MCP_METHOD, MCP_NAME, MCP_SESSION_ID};
use pingora::prelude::*;
use std::time::SystemTime;

/// Records the request in its route's capture file, if the route captures.
pub(super) fn record(captures: &Captures, session: &Session, ctx: &RequestCtx, outcome: &str) {
    let Some(config) = ctx.capture_config() else {
        return;
    };
    let req = session.req_header();
    let response = session.response_written();
    let header = |h: &http::HeaderMap, name: &str| -> Option<String> {
        h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let session_id = header(&req.headers, MCP_SESSION_ID)
        .or_else(|| response.and_then(|r| header(&r.headers, MCP_SESSION_ID)));
    let (method, name) = (
        header(&req.headers, MCP_METHOD),
        header(&req.headers, MCP_NAME),
    );
    let read = session.body_bytes_read() as u64;
    // The fast path keeps the first chunk (or the whole checked body): whole when it is all
    // that was read.
    let prefix = ctx
        .body_prefix
        .as_deref()
        .filter(|b| read > 0 && b.len() as u64 == read);
    let held = ctx.captured.as_deref();
    let elapsed = ctx.start.elapsed();
    let backend = ctx.backend.as_ref().map(|b| b.label.clone());
    let seen = Seen {
        at: SystemTime::now().checked_sub(elapsed),
        route: ctx.route_label(),
        session: session_id.as_deref(),
        http_method: req.method.as_str(),
        method_header: method.as_deref(),
        name_header: name.as_deref(),
        status: response.map(|r| r.status.as_u16()),
        outcome,
        latency: elapsed,
        request_bytes: read,
        response_bytes: session.body_bytes_sent() as u64,
        backend: backend.as_deref(),
        request_body: held.and_then(|h| h.request.as_deref()).or(prefix),
        response_body: held.and_then(|h| h.response.as_deref()),
    };
    captures.write(config, &seen);
}
