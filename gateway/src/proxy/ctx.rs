//! Per-request context carried through the proxy phases.

use crate::error::GatewayError;
use crate::mcp::{Era, RequestId};
use crate::state::State;
use crate::upstream::InflightGuard;
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use std::time::Instant;

/// What the gateway knows about one request as it moves through the phases.
pub struct RequestCtx {
    /// Snapshot of the running state for the whole request.
    pub state: Option<Arc<State>>,
    /// Route index, once matched.
    pub route: Option<usize>,
    /// Pool index chosen for this request.
    pub pool: usize,
    /// Backends already tried (connection failures), in order.
    pub tried: Vec<std::net::SocketAddr>,
    /// Backend the current attempt goes to.
    pub backend: Option<std::sync::Arc<crate::upstream::Backend>>,
    /// Counts the request in flight on its backend.
    pub inflight: Option<InflightGuard>,
    /// Bounded method label for metrics.
    pub method_label: &'static str,
    /// Protocol era by the `MCP-Protocol-Version` header.
    pub era: Era,
    /// Whether the body must be held back and checked against the MCP headers.
    pub check_body: bool,
    /// Request body held back for checking, or counted for the size limit.
    pub body: BytesMut,
    /// Bytes of request body seen.
    pub body_seen: u64,
    /// The `X-Request-Id` of this request: the client's, or one the gateway made; sent
    /// upstream, on error answers and in the access log.
    pub trace_id: Option<String>,
    /// The JSON-RPC id of the request, when already known.
    pub request_id: Option<RequestId>,
    /// The body as forwarded (checked bodies) or its first chunk (streamed bodies): a cheap
    /// reference kept so an error after forwarding can still carry the request's id.
    pub body_prefix: Option<Bytes>,
    /// An error raised inside a body filter, answered by `fail_to_proxy`.
    pub pending_error: Option<GatewayError>,
    /// The client identity limits are keyed by (when a limit needs one).
    pub identity: Option<std::sync::Arc<str>>,
    /// Admission slots held while the request runs.
    pub permit: Option<crate::admission::Permit>,
    /// A GET stream counted in `mcpgw_open_streams` (uncounted when the request ends).
    pub stream_counted: bool,
    /// The per-tool rate was checked already (from the MCP headers).
    pub tool_admitted: bool,
    /// For `tools/call`: index of the tool in `metric-tools`, or `usize::MAX` for `other`.
    pub tool: Option<usize>,
    /// When the request head went upstream (native path), for the upstream latency.
    pub upstream_sent: Option<Instant>,
    /// Outcome label for metrics when the gateway answered itself.
    pub outcome: Option<&'static str>,
    /// When the request head arrived.
    pub start: Instant,
}

impl RequestCtx {
    /// Notes the tool of a `tools/call`, for `mcpgw_tool_calls_total`.
    pub fn note_tool(&mut self, method: Option<&str>, name: Option<&str>) {
        if let (Some("tools/call"), Some(state)) = (method, self.state.as_ref()) {
            let tools = &state.config.metric_tools;
            self.tool = Some(
                name.and_then(|n| tools.iter().position(|t| t == n))
                    .unwrap_or(usize::MAX),
            );
        }
    }
}

impl Default for RequestCtx {
    fn default() -> Self {
        RequestCtx {
            state: None,
            route: None,
            pool: 0,
            tried: Vec::new(),
            backend: None,
            inflight: None,
            method_label: "none",
            era: Era::Legacy,
            check_body: false,
            body: BytesMut::new(),
            body_seen: 0,
            trace_id: None,
            request_id: None,
            body_prefix: None,
            pending_error: None,
            identity: None,
            permit: None,
            stream_counted: false,
            tool_admitted: false,
            tool: None,
            upstream_sent: None,
            outcome: None,
            start: Instant::now(),
        }
    }
}
