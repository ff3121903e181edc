//! The one place where gateway errors become HTTP answers: every error the gateway generates
//! is a JSON-RPC error object carrying the request's id, a documented code, a message a person
//! understands and a `data` object with machine-readable details.

mod http;

use crate::mcp::InspectError;
use serde_json::{Map, Value};

/// What went wrong, with its JSON-RPC code and HTTP status. The table in docs/errors.md is this enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The body is not JSON. JSON-RPC -32700, HTTP 400.
    ParseError,
    /// JSON, but not one JSON-RPC message (batches included). JSON-RPC -32600, HTTP 400.
    InvalidRequest,
    /// `Mcp-Method`/`Mcp-Name`/`MCP-Protocol-Version` disagree with the body, are duplicated or
    /// undecodable. JSON-RPC -32020 (2026-07-28 spec), HTTP 400.
    HeaderMismatch,
    /// No route for this path. -32010, HTTP 404.
    NoRoute,
    /// No backend could take the request (all refused or none configured). -32011, HTTP 503
    /// with `Retry-After`.
    BackendUnavailable,
    /// The backend did not answer in time. -32012, HTTP 200 (see [`ErrorKind::http_status`]).
    UpstreamTimeout,
    /// The connection to the backend broke after the request was sent; the outcome is unknown.
    /// -32013, HTTP 200 (see [`ErrorKind::http_status`]).
    BackendLost,
    /// The request body is larger than `max-body-bytes`. -32014, HTTP 413.
    BodyTooLarge,
    /// The gateway session id is unknown, expired, deleted, or could not be moved to another
    /// backend (`data.reason`). -32015, HTTP 404: the spec tells clients to re-initialize.
    SessionNotFound,
    /// The gateway, or this client, holds its configured maximum of sessions. -32016, HTTP 503
    /// + `Retry-After`.
    SessionLimit,
    /// A client (or client and tool) exceeded its request rate. -32017, HTTP 429 + `Retry-After`.
    RateLimited,
    /// A concurrency cap (in-flight requests, open streams) is reached. -32018, HTTP 503 +
    /// `Retry-After`.
    Overloaded,
    /// A bug or an unexpected state in the gateway. -32019, HTTP 500.
    Internal,
    /// The `Host` header names a host this listener does not serve (`allowed-hosts`):
    /// DNS-rebinding protection. -32009, HTTP 421.
    HostNotAllowed,
    /// The `Origin` header names an origin not in `allowed-origins`. -32008, HTTP 403.
    OriginNotAllowed,
    /// A stateless route's backend opened a session (it is a legacy, session-based server):
    /// the route must be `stateful` or `auto`. -32007, HTTP 200 (every client shows it).
    SessionRequired,
    /// The session store cannot be reached, so the session cannot be looked up, created or
    /// moved; it is neither lost nor silently recreated. -32006, HTTP 503 + `Retry-After`.
    StoreUnavailable,
    /// A `Last-Event-ID` names no event the gateway can continue after in this session: never
    /// issued here (or issued in another session), or no longer kept (`data.reason`: `unknown`,
    /// `evicted`). The session itself is fine. -32030, HTTP 410.
    ResumeUnavailable,
    /// No valid credential (missing, malformed, bad signature, unknown key, expired, wrong
    /// issuer or audience, unknown API key). -32023, HTTP 401 + `WWW-Authenticate: Bearer
    /// resource_metadata="…"`.
    Unauthorized,
    /// The principal may not make this call (an `authz` rule; a missing scope is
    /// `insufficient_scope`). -32024, HTTP 403 + `WWW-Authenticate`.
    Forbidden,
    /// The signing keys could not be fetched, so a token cannot be checked. -32025, HTTP 503 +
    /// `Retry-After`.
    AuthUnavailable,
    /// The HTTP framing cannot be trusted (differing `Content-Length`s, an unknown
    /// `Transfer-Encoding`, an unparsable request head): answered, then the connection is
    /// closed. -32026, HTTP 400.
    BadFraming,
    /// The request head is too large or has too many header lines. -32027, HTTP 431.
    HeadTooLarge,
    /// The client sent its request head too slowly (`client-timeouts.header-s`) or fell
    /// silent while sending its body (`client-timeouts.body-s`). -32028, HTTP 408.
    ClientTimeout,
    /// The route does not serve this HTTP method (`Allow` lists the ones it does). -32029,
    /// HTTP 405.
    MethodNotAllowed,
}

impl ErrorKind {
    /// The JSON-RPC error code.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::ParseError => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::HeaderMismatch => -32020,
            ErrorKind::NoRoute => -32010,
            ErrorKind::BackendUnavailable => -32011,
            ErrorKind::UpstreamTimeout => -32012,
            ErrorKind::BackendLost => -32013,
            ErrorKind::BodyTooLarge => -32014,
            ErrorKind::SessionNotFound => -32015,
            ErrorKind::SessionLimit => -32016,
            ErrorKind::RateLimited => -32017,
            ErrorKind::Overloaded => -32018,
            ErrorKind::Internal => -32019,
            ErrorKind::HostNotAllowed => -32009,
            ErrorKind::OriginNotAllowed => -32008,
            ErrorKind::SessionRequired => -32007,
            ErrorKind::StoreUnavailable => -32006,
            ErrorKind::ResumeUnavailable => -32030,
            ErrorKind::Unauthorized => -32023,
            ErrorKind::Forbidden => -32024,
            ErrorKind::AuthUnavailable => -32025,
            ErrorKind::BadFraming => -32026,
            ErrorKind::HeadTooLarge => -32027,
            ErrorKind::ClientTimeout => -32028,
            ErrorKind::MethodNotAllowed => -32029,
        }
    }

    /// The HTTP status of the answer.
    ///
    /// Measured with the real clients: the 2.3.0 Python SDK surfaces a JSON-RPC error body at
    /// any status; the 1.30.0 Python SDK surfaces it only on HTTP 200 (any 4xx/5xx kills its
    /// connection, 404 becomes "Session terminated"). Errors about one call's outcome (lost
    /// backend, timeout) are therefore answered with 200 so every client shows the message;
    /// protocol-level rejections keep the status HTTP infrastructure expects.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::ParseError | ErrorKind::InvalidRequest | ErrorKind::HeaderMismatch => 400,
            ErrorKind::NoRoute | ErrorKind::SessionNotFound => 404,
            ErrorKind::BodyTooLarge => 413,
            ErrorKind::BackendLost | ErrorKind::UpstreamTimeout | ErrorKind::SessionRequired => 200,
            ErrorKind::HostNotAllowed => 421,
            ErrorKind::OriginNotAllowed => 403,
            ErrorKind::BackendUnavailable
            | ErrorKind::SessionLimit
            | ErrorKind::Overloaded
            | ErrorKind::StoreUnavailable => 503,
            ErrorKind::RateLimited => 429,
            ErrorKind::Internal => 500,
            ErrorKind::ResumeUnavailable => 410,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::AuthUnavailable => 503,
            ErrorKind::BadFraming => 400,
            ErrorKind::HeadTooLarge => 431,
            ErrorKind::ClientTimeout => 408,
            ErrorKind::MethodNotAllowed => 405,
        }
    }

    /// `Retry-After` seconds, for errors a client should retry later.
    pub fn retry_after_secs(self) -> Option<u32> {
        match self {
            ErrorKind::BackendUnavailable | ErrorKind::StoreUnavailable => Some(1),
            ErrorKind::SessionLimit => Some(5),
            ErrorKind::RateLimited | ErrorKind::Overloaded => Some(1),
            ErrorKind::AuthUnavailable => Some(1),
            _ => None,
        }
    }

    /// Stable name, used as `data.kind` and as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "parse-error",
            ErrorKind::InvalidRequest => "invalid-request",
            ErrorKind::HeaderMismatch => "header-mismatch",
            ErrorKind::NoRoute => "no-route",
            ErrorKind::BackendUnavailable => "backend-unavailable",
            ErrorKind::UpstreamTimeout => "upstream-timeout",
            ErrorKind::BackendLost => "backend-lost",
            ErrorKind::BodyTooLarge => "body-too-large",
            ErrorKind::SessionNotFound => "session-not-found",
            ErrorKind::SessionLimit => "session-limit",
            ErrorKind::RateLimited => "rate-limited",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::Internal => "internal",
            ErrorKind::HostNotAllowed => "host-not-allowed",
            ErrorKind::OriginNotAllowed => "origin-not-allowed",
            ErrorKind::SessionRequired => "session-required",
            ErrorKind::StoreUnavailable => "store-unavailable",
            ErrorKind::ResumeUnavailable => "resume-unavailable",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::AuthUnavailable => "auth-unavailable",
            ErrorKind::BadFraming => "bad-framing",
            ErrorKind::HeadTooLarge => "head-too-large",
            ErrorKind::ClientTimeout => "client-timeout",
            ErrorKind::MethodNotAllowed => "method-not-allowed",
        }
    }

    /// Whether this is an admission rejection (counted in `mcpgw_rejections_total`).
    pub fn is_rejection(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimited
                | ErrorKind::Overloaded
                | ErrorKind::SessionLimit
                | ErrorKind::BodyTooLarge
        )
    }
}

/// An error the gateway answers itself.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayError {
    /// Code, status and name.
    pub kind: ErrorKind,
    /// For a person.
    pub message: String,
    /// Machine-readable details; `kind` is always added.
    pub data: Map<String, Value>,
    /// When to retry, overriding the kind's default (`Retry-After`, `data.retryAfterMs`).
    pub retry_after: Option<std::time::Duration>,
}

impl GatewayError {
    /// An error with no details beyond its kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        GatewayError {
            kind,
            message: message.into(),
            data: Map::new(),
            retry_after: None,
        }
    }

    /// Adds one machine-readable detail.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.data.insert(key.to_owned(), value.into());
        self
    }

    /// The body is not JSON.
    pub fn parse_error(detail: &str) -> Self {
        Self::new(
            ErrorKind::ParseError,
            "Parse error: the request body is not valid JSON",
        )
        .with("detail", detail)
    }

    /// The body is JSON but not a single JSON-RPC message.
    pub fn invalid_request(detail: &str) -> Self {
        Self::new(
            ErrorKind::InvalidRequest,
            format!("Invalid request: {detail}"),
        )
    }

    /// A header disagrees with the body, or is duplicated or undecodable.
    pub fn header_mismatch(
        header: &str,
        header_value: Option<&str>,
        body_value: Option<&str>,
    ) -> Self {
        let message = match (header_value, body_value) {
            (Some(h), Some(b)) => {
                format!("Header mismatch: {header} is `{h}` but the body says `{b}`")
            }
            (Some(h), None) => {
                format!("Header mismatch: {header} is `{h}` but the body has no such value")
            }
            (None, Some(b)) => {
                format!("Header mismatch: {header} is missing but the body says `{b}`")
            }
            (None, None) => format!("Header mismatch: {header} is invalid"),
        };
        Self::new(ErrorKind::HeaderMismatch, message)
            .with("header", header)
            .with("headerValue", header_value.map_or(Value::Null, Value::from))
            .with("bodyValue", body_value.map_or(Value::Null, Value::from))
    }

    /// An MCP header was sent more than once.
    pub fn duplicate_header(header: &str) -> Self {
        Self::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {header} was sent more than once"),
        )
        .with("header", header)
        .with("reason", "duplicated")
    }

    /// An MCP header cannot be decoded (bad `=?base64?...?=` sentinel or not UTF-8).
    pub fn undecodable_header(header: &str) -> Self {
        Self::new(
            ErrorKind::HeaderMismatch,
            format!("Header mismatch: {header} cannot be decoded"),
        )
        .with("header", header)
        .with("reason", "undecodable")
    }

    /// No route takes this path.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            ErrorKind::NoRoute,
            format!("No MCP endpoint at {path} on this gateway"),
        )
        .with("path", path)
    }

    /// No backend of the pool could take the request.
    pub fn unavailable(pool: &str, tried: usize) -> Self {
        Self::new(
            ErrorKind::BackendUnavailable,
            format!("No backend of pool `{pool}` is reachable right now; retry shortly"),
        )
        .with("pool", pool)
        .with("backendsTried", tried)
    }

    /// The backend did not answer in time.
    pub fn upstream_timeout(pool: &str, backend: &str) -> Self {
        Self::new(
            ErrorKind::UpstreamTimeout,
            format!("Backend {backend} did not answer in time"),
        )
        .with("pool", pool)
        .with("backend", backend)
    }

    /// The backend connection broke after the request was sent.
    pub fn backend_lost(pool: &str, backend: &str) -> Self {
        Self::new(
            ErrorKind::BackendLost,
            format!("Lost the connection to backend {backend} before its answer was complete; the outcome is unknown"),
        )
        .with("pool", pool)
        .with("backend", backend)
        .with("outcome", "unknown")
    }

    /// The body exceeds the configured limit.
    pub fn body_too_large(limit: u64) -> Self {
        Self::new(
            ErrorKind::BodyTooLarge,
            format!("Request body is larger than this gateway accepts ({limit} bytes)"),
        )
        .with("limitBytes", limit)
        .with("limit", limit)
        .with("scope", "request")
    }

    /// The session id does not name a live session; `reason` is unknown, expired, deleted or
    /// reinit-failed.
    pub fn session_not_found(reason: &str) -> Self {
        let message = match reason {
            "expired" => "Session expired; start a new one with initialize",
            "deleted" => "Session was deleted; start a new one with initialize",
            "reinit-failed" => {
                "Session was lost: no backend could take it over; start a new one with initialize"
            }
            _ => "Session not found; start a new one with initialize",
        };
        Self::new(ErrorKind::SessionNotFound, message).with("reason", reason)
    }

    /// The session table is full.
    pub fn session_limit(max: usize) -> Self {
        Self::new(
            ErrorKind::SessionLimit,
            "This gateway holds its maximum number of sessions; retry later",
        )
        .with("limit", max)
        .with("scope", "gateway")
    }

    /// A client (`scope: client`) or client and tool (`scope: tool`) is over its rate.
    pub fn rate_limited(scope: &str, per_second: f64, wait: std::time::Duration) -> Self {
        let mut e = Self::new(
            ErrorKind::RateLimited,
            format!("Too many requests ({scope} limit of {per_second} per second); retry later"),
        )
        .with("scope", scope)
        .with("limit", per_second);
        e.retry_after = Some(wait);
        e
    }

    /// A concurrency cap is reached: `what` is inflight or streams, `scope` gateway or route.
    pub fn overloaded(scope: &str, what: &str, limit: usize) -> Self {
        let noun = if what == "streams" {
            "open streams"
        } else {
            "requests in flight"
        };
        Self::new(
            ErrorKind::Overloaded,
            format!("The gateway is at its limit of {limit} {noun} ({scope}); retry shortly"),
        )
        .with("scope", scope)
        .with("reason", what)
        .with("limit", limit)
    }

    /// The client's share of sessions is used up.
    pub fn client_session_limit(max: usize) -> Self {
        Self::new(
            ErrorKind::SessionLimit,
            format!(
                "This client already holds its maximum of {max} sessions; close one or retry later"
            ),
        )
        .with("limit", max)
        .with("scope", "client")
    }

    /// The backend did not finish within the route's or the tool's deadline; the upstream
    /// request was cancelled.
    pub fn deadline(pool: &str, backend: &str, after: std::time::Duration) -> Self {
        Self::new(
            ErrorKind::UpstreamTimeout,
            format!(
                "Backend {backend} did not finish within {} ms; the request was cancelled",
                after.as_millis()
            ),
        )
        .with("pool", pool)
        .with("backend", backend)
        .with("timeoutMs", after.as_millis() as u64)
    }

    /// The `Host` is not one this listener serves.
    pub fn host_not_allowed(host: Option<&str>) -> Self {
        let message = match host {
            Some(h) => format!("Host `{h}` is not served by this gateway (allowed-hosts)"),
            None => "A Host header is required by this gateway (allowed-hosts)".to_owned(),
        };
        Self::new(ErrorKind::HostNotAllowed, message)
            .with("host", host.map_or(Value::Null, Value::from))
    }

    /// The `Origin` is not allowed to call this gateway.
    pub fn origin_not_allowed(origin: &str) -> Self {
        Self::new(
            ErrorKind::OriginNotAllowed,
            format!("Origin `{origin}` may not call this gateway (allowed-origins)"),
        )
        .with("origin", origin)
    }

    /// A stateless route's backend answered with a session of its own.
    pub fn session_required(route: &str, backend: &str) -> Self {
        Self::new(
            ErrorKind::SessionRequired,
            format!(
                "Backend {backend} requires MCP sessions, but route {route} is stateless; \
                 use a 2026-07-28 client, or ask the operator to set the route's mode to stateful or auto"
            ),
        )
        .with("route", route)
        .with("backend", backend)
        .with("routeMode", "stateless")
    }

    /// The session store failed; the session is kept as it was.
    pub fn store_unavailable(detail: &str) -> Self {
        Self::new(
            ErrorKind::StoreUnavailable,
            "The gateway's session store is unavailable; retry shortly",
        )
        .with("detail", detail)
    }

    /// A `Last-Event-ID` the gateway cannot continue after (`reason`: `unknown` or `evicted`).
    pub fn resume_unavailable(reason: &str, last_event_id: &str) -> Self {
        let message = match reason {
            "evicted" => "The events after this Last-Event-ID are no longer kept; the request's outcome is unknown (repeat it if it is safe to)",
            _ => "This Last-Event-ID names no stream of this session; the session is fine, open a new GET without Last-Event-ID",
        };
        let shown: String = last_event_id.chars().take(64).collect();
        Self::new(ErrorKind::ResumeUnavailable, message)
            .with("reason", reason)
            .with("lastEventId", shown)
    }

    /// HTTP framing the gateway will not guess at; the connection closes after the answer.
    pub fn bad_framing(detail: &str) -> Self {
        Self::new(
            ErrorKind::BadFraming,
            format!("Bad request framing: {detail}"),
        )
        .with("detail", detail)
    }

    /// A request head over the gateway's limits.
    pub fn head_too_large(limit: &str) -> Self {
        Self::new(
            ErrorKind::HeadTooLarge,
            format!("Request head too large: {limit}"),
        )
        .with("limit", limit)
    }

    /// The client took longer than `client-timeouts.header-s` to send its request head, or
    /// fell silent for `client-timeouts.body-s` while sending its body.
    pub fn client_timeout(after: std::time::Duration) -> Self {
        Self::new(ErrorKind::ClientTimeout, "The request was not sent in time")
            .with("timeoutMs", after.as_millis() as u64)
    }

    /// An HTTP method the route does not serve; `allow` lists those it does.
    pub fn method_not_allowed(method: &str, allow: &str) -> Self {
        Self::new(
            ErrorKind::MethodNotAllowed,
            format!("Method {method} is not allowed here (allowed: {allow})"),
        )
        .with("method", method)
        .with("allow", allow)
    }

    /// An unexpected state inside the gateway.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, "Internal gateway error").with("detail", detail.into())
    }
}

/// Authentication and authorization answers (`auth/`).
impl GatewayError {
    /// No valid credential: `reason` says why; `metadata` is the protected-resource metadata
    /// URL named in `WWW-Authenticate`.
    pub fn unauthorized(reason: &str, metadata: &str) -> Self {
        let message = if reason == "missing" {
            "Authentication required: send a bearer token".to_owned()
        } else {
            format!("Authentication failed: the credential was refused ({reason})")
        };
        let e = Self::new(ErrorKind::Unauthorized, message)
            .with("reason", reason)
            .with("resourceMetadata", metadata);
        if reason == "missing" {
            e
        } else {
            e.with("error", "invalid_token")
        }
    }

    /// The principal may not make this call; `scope` is the scope a rule requires.
    pub fn forbidden(scope: Option<&str>, metadata: &str) -> Self {
        let e = Self::new(
            ErrorKind::Forbidden,
            match scope {
                Some(s) => format!("Forbidden: this call needs the scope `{s}`"),
                None => "Forbidden: this call is not allowed for this principal".to_owned(),
            },
        )
        .with("resourceMetadata", metadata);
        match scope {
            Some(s) => e.with("error", "insufficient_scope").with("scope", s),
            None => e.with("error", "insufficient_scope"),
        }
    }

    /// The signing keys could not be fetched.
    pub fn auth_unavailable(detail: &str) -> Self {
        Self::new(
            ErrorKind::AuthUnavailable,
            "The gateway cannot check tokens right now (signing keys unavailable); retry shortly",
        )
        .with("detail", detail)
    }
}

impl std::fmt::Display for GatewayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.kind.as_str(),
            self.kind.code(),
            self.message
        )
    }
}

impl std::error::Error for GatewayError {}

impl From<crate::session::StoreError> for GatewayError {
    fn from(e: crate::session::StoreError) -> Self {
        GatewayError::store_unavailable(&e.detail)
    }
}

impl From<InspectError> for GatewayError {
    fn from(e: InspectError) -> Self {
        match e {
            InspectError::Parse(detail) => GatewayError::parse_error(&detail),
            InspectError::Batch => {
                GatewayError::invalid_request("batches are not supported by MCP")
            }
            InspectError::NotAMessage(detail) => GatewayError::invalid_request(&detail),
        }
    }
}

#[cfg(test)]
mod tests;
