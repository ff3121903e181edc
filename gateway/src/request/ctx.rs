//! Per-request context carried through the proxy phases. Nothing here is an `Option` the
//! request path must `expect`: the state snapshot is set at creation, the route is held
//! directly once matched, and the fast path's attempt state (`native`, and the backend of the
//! current attempt) exists only on the fast path, where its phases read it through one
//! accessor (`proxy/mod.rs` `attempt`) that answers an internal error, never a panic.

use crate::admission::Permit;
use crate::error::{ErrorKind, GatewayError};
use crate::routing::Route;
use crate::state::State;
use crate::upstream::{Backend, InflightGuard, Pool};
use bytes::{Bytes, BytesMut};
use mcp_wire::{Era, RequestId};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// How a request ended, for metrics and the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Still running, or ended with whatever status went out.
    Forwarded,
    /// The gateway answered with this error.
    Answered(ErrorKind),
    /// The client went away first.
    ClientGone,
}

impl Outcome {
    /// The `outcome` label: the error kind, `client-gone`, or the status class written.
    pub fn label(self, status: Option<u16>) -> &'static str {
        match (self, status) {
            (Outcome::Answered(kind), _) => kind.as_str(),
            (Outcome::ClientGone, _) => "client-gone",
            (Outcome::Forwarded, Some(100..=399)) => "ok",
            (Outcome::Forwarded, Some(400..=499)) => "4xx",
            (Outcome::Forwarded, Some(_)) => "5xx",
            (Outcome::Forwarded, None) => "dropped",
        }
    }
}

/// What admission granted: held while the request runs.
#[derive(Debug, Default)]
pub struct Admitted {
    /// The client identity limits are keyed by (when a limit needs one).
    pub identity: Option<Arc<str>>,
    /// Concurrency slots, given back on drop.
    pub permit: Permit,
    /// A GET stream counted in `mcpgw_open_streams` (uncounted when the request ends).
    pub stream_counted: bool,
}

/// The fast path (pingora's own pipeline): the attempt state its phases share.
pub struct Native {
    /// The route.
    pub route: Arc<Route>,
    /// The pool the request goes to.
    pub pool: Arc<Pool>,
    /// Counts the request in flight on the backend of the current attempt.
    pub inflight: Option<InflightGuard>,
    /// When the request head went upstream, for the upstream latency.
    pub sent: Option<Instant>,
    /// Whether the body must be held back and checked against the MCP headers.
    pub check_body: bool,
    /// Request body held back for checking.
    pub body: BytesMut,
    /// Bytes of request body seen.
    pub body_seen: u64,
    /// A task's request, sent to the pod holding the task (`handlers/tasks/fast.rs`).
    pub task: Option<Box<crate::tasks::pinned::Pinned>>,
    /// The token the request goes upstream with, and its source (the token is dropped there
    /// if the backend answers 401).
    /// (Boxed: only pools with upstream credentials have one.)
    pub token: Option<Box<(Arc<crate::upstream::tokens::TokenSource>, http::HeaderValue)>>,
    /// A call on a virtual route: its member, and the member's own name for it.
    pub rename: Option<Box<dyn Rename>>,
}

/// A call on a virtual route's fast path, as the phases see it (`virtual_servers/fast.rs`
/// makes it): which member it goes to, and that member's own name for what the client named.
pub trait Rename: Send + Sync {
    /// The member's name, for errors (`data.member`) and metrics.
    fn member(&self) -> &str;
    /// The request head for the member: its own name in `Mcp-Name`, and the length of the
    /// body it gets.
    fn head(&self, upstream: &mut pingora::http::RequestHeader) -> Result<(), GatewayError>;
    /// The body, checked against the client's headers, for the member (`checked`: the name as
    /// the check read it), counted as routed to it in `events`.
    fn body(
        &self,
        body: &Bytes,
        checked: Option<&std::borrow::Cow<'_, str>>,
        events: &pingora_prometheus::prometheus::IntCounterVec,
    ) -> Result<Bytes, GatewayError>;
}

impl Native {
    /// The fast path to `pool` on `route`, the body held back and checked when `check_body`.
    pub fn new(route: Arc<Route>, pool: Arc<Pool>, check_body: bool) -> Native {
        Native {
            route,
            pool,
            inflight: None,
            sent: None,
            check_body,
            body: Default::default(),
            body_seen: 0,
            task: None,
            token: None,
            rename: None,
        }
    }
}

/// What the gateway knows about one request as it moves through the phases.
pub struct RequestCtx {
    /// Snapshot of the running state for the whole request.
    pub state: Arc<State>,
    /// When the request head arrived.
    pub start: Instant,
    /// The `X-Request-Id` of this request: the client's, or one the gateway made; sent
    /// upstream, on error answers and in the access log.
    pub trace_id: String,
    /// The matched route (`None` until routing, or when no route matched).
    pub route: Option<Arc<Route>>,
    /// Protocol era by the `MCP-Protocol-Version` header.
    pub era: Era,
    /// Bounded method label for metrics.
    pub method_label: &'static str,
    /// For `tools/call`: index of the tool in `metric-tools`, or `usize::MAX` for `other`.
    pub tool: Option<usize>,
    /// What admission granted.
    pub admitted: Admitted,
    /// The JSON-RPC id of the request, once known.
    pub request_id: Option<RequestId>,
    /// The body as forwarded (checked bodies) or its first chunk (streamed bodies): a cheap
    /// reference kept so an error after forwarding can still carry the request's id.
    pub body_prefix: Option<Bytes>,
    /// An error raised inside a pingora phase, answered by `fail_to_proxy`.
    pub pending_error: Option<Box<GatewayError>>,
    /// pingora's proxy phase began (`upstream_peer` ran): an error from here on ends the
    /// client's connection whatever `fail_to_proxy` says (pingora reuses it only after an
    /// error of the request phases), so its answer must say `Connection: close`.
    pub proxying: bool,
    /// Backends tried, in order.
    pub tried: Vec<SocketAddr>,
    /// The backend that served (or was last tried), for the access log.
    pub backend: Option<Arc<Backend>>,
    /// Fast-path state, when the request goes through pingora's pipeline.
    pub native: Option<Native>,
    /// How it ended.
    pub outcome: Outcome,
    /// The authenticated caller (`auth`), if any.
    pub principal: Option<Arc<crate::auth::Principal>>,
    /// Bodies held for request capture (only on routes that capture).
    pub captured: Option<Box<crate::capture::Held>>,
    /// The request's span as an OpenTelemetry context (traces on).
    pub otel: Option<opentelemetry::Context>,
    /// The MCP method and name, kept for the span (traces on) and the audit record (audit on).
    pub mcp_call: Option<Box<(String, Option<String>)>>,
    /// Whether the body's client capabilities list the Tasks extension (`None`: the body was
    /// not read): a server may answer with a task only then, so only then is the answer
    /// watched for one.
    pub declares_tasks: Option<bool>,
    /// What the audit record of this request says beyond the context (audit on only): the
    /// authorization decision and its rule, a virtual call's member.
    pub audit: Option<Box<crate::audit::Noted>>,
}

impl RequestCtx {
    /// A context for a request arriving under `state`.
    pub fn new(state: Arc<State>) -> RequestCtx {
        RequestCtx {
            state,
            start: Instant::now(),
            trace_id: String::new(),
            route: None,
            era: Era::Legacy,
            method_label: "none",
            tool: None,
            admitted: Admitted::default(),
            request_id: None,
            body_prefix: None,
            pending_error: None,
            proxying: false,
            tried: Vec::new(),
            backend: None,
            native: None,
            outcome: Outcome::Forwarded,
            principal: None,
            captured: Default::default(),
            otel: None,
            mcp_call: None,
            declares_tasks: None,
            audit: None,
        }
    }

    /// Notes the tool of a `tools/call`, for `mcpgw_tool_calls_total`.
    pub fn note_tool(&mut self, method: Option<&str>, name: Option<&str>) {
        let kept = self.otel.is_some() || self.state.audit.on();
        if let (true, Some(m)) = (kept, method) {
            self.mcp_call = Some(Box::new((m.to_owned(), name.map(str::to_owned))));
        }
        if method == Some("tools/call") {
            let tools = &self.state.config.metric_tools;
            self.tool = Some(
                name.and_then(|n| tools.iter().position(|t| t == n))
                    .unwrap_or(usize::MAX),
            );
        }
    }

    /// Keeps the whole request body for capture, when the route captures (or the audit
    /// trail records bodies).
    pub fn capture_request(&mut self, body: &bytes::Bytes) {
        if self.capture_config().is_some() || self.state.audit.bodies() {
            self.captured.get_or_insert_default().request = Some(body.clone());
        }
    }

    /// Keeps a response body written whole, for capture, when the route captures (or the
    /// audit trail records bodies).
    pub fn capture_response(&mut self, body: &bytes::Bytes) {
        if self.capture_config().is_some() || self.state.audit.bodies() {
            self.captured.get_or_insert_default().response = Some(body.clone());
        }
    }

    /// The matched route's capture config, if it captures.
    pub fn capture_config(&self) -> Option<&crate::config::CaptureConfig> {
        let route = self.route.as_ref()?;
        self.state.config.routes.get(route.index)?.capture.as_ref()
    }

    /// The audit notes of this request, made on first use: `None` when audit is off.
    pub fn audit_note(&mut self) -> Option<&mut crate::audit::Noted> {
        if !self.state.audit.on() {
            return None;
        }
        Some(self.audit.get_or_insert_default())
    }

    /// Notes a virtual call's member (`name`) and the pool at `pool` for the audit record,
    /// when audit is on.
    pub fn note_member(&mut self, name: &str, pool: usize) {
        let pool = self.state.pool(pool).ok().map(|p| p.name.to_string());
        if let Some(note) = self.audit_note() {
            note.member = Some(name.to_owned());
            note.pool = pool;
        }
    }

    /// The route label for metrics (`none` before routing).
    pub fn route_label(&self) -> &str {
        self.route.as_ref().map_or("none", |r| r.label.as_str())
    }
}
