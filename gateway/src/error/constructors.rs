//! The named constructors of gateway errors, one per situation (as linkerd names its synthetic
//! answers): each sets the kind, the message a person reads and the `data` details.

use super::{ErrorKind, GatewayError};
use serde_json::Value;

impl GatewayError {
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

    /// The pool has backends but none of them serves `era` (`legacy` or `modern`): the typed
    /// "no backend of this era" outcome that a bridge can take over.
    pub fn no_backend_of_era(pool: &str, era: mcp_wire::Era, backends: usize) -> Self {
        let (needed, other) = match era {
            mcp_wire::Era::Legacy => ("legacy (sessions)", "modern-only"),
            mcp_wire::Era::Stateless => ("2026-07-28", "legacy"),
        };
        Self::new(
            ErrorKind::NoBackendOfEra,
            format!(
                "No backend of pool `{pool}` serves {needed} requests: its {backends} backend(s) are {other}"
            ),
        )
        .with(
            "era",
            match era {
                mcp_wire::Era::Legacy => "legacy",
                mcp_wire::Era::Stateless => "modern",
            },
        )
        .with("pool", pool)
        .with("backends", backends)
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

    /// The backend answered `101 Switching Protocols` to a request that asked for no
    /// upgrade (the gateway sends none): its answer is not relayed, and what it did with the
    /// request is not known.
    pub fn switched_protocols(pool: &str, backend: &str) -> Self {
        Self::new(
            ErrorKind::BackendLost,
            format!("Backend {backend} switched protocols (101) instead of answering; Streamable HTTP never upgrades, so its answer was not relayed and the outcome is unknown"),
        )
        .with("pool", pool)
        .with("backend", backend)
        .with("outcome", "unknown")
        .with("reason", "switched-protocols")
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
        let noun = match what {
            "streams" => "open streams",
            "connections" => "client connections",
            _ => "requests in flight",
        };
        Self::new(
            ErrorKind::Overloaded,
            format!("The gateway is at its limit of {limit} {noun} ({scope}); retry shortly"),
        )
        .with("scope", scope)
        .with("reason", what)
        .with("limit", limit)
    }

    /// Virtual servers' merged lists hold `limit` bytes of members' answers (`scope`:
    /// `gateway`, all of them; `caller`, this caller's share): `limits.max-merged-list-bytes`.
    pub fn merged_lists_full(scope: &str, limit: usize) -> Self {
        let whose = match scope {
            "caller" => "this caller's share",
            _ => "the gateway's bound",
        };
        Self::new(
            ErrorKind::Overloaded,
            format!("Merged lists of virtual servers hold {whose} of {limit} bytes of members' answers right now; retry shortly"),
        )
        .with("scope", scope)
        .with("reason", "merged-list-bytes")
        .with("limit", limit)
    }

    /// The client address holds its share of connections (`limits.max-connections-per-client`).
    pub fn client_connections(limit: usize) -> Self {
        Self::new(
            ErrorKind::Overloaded,
            format!(
                "This client address already holds its share of {limit} connections; close one or retry shortly"
            ),
        )
        .with("scope", "client")
        .with("reason", "connections")
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

    /// A call refused because `audit.required` is set and the audit sink cannot write now
    /// (`method` the call's; `reason` `unwritable` or `queue-full`).
    pub fn audit_unavailable(method: &str, reason: &str) -> Self {
        Self::new(
            ErrorKind::AuditUnavailable,
            "The gateway cannot write its audit trail now, and this deployment requires every \
             call to be audited (audit.required): the call was not sent; retry shortly",
        )
        .with("method", method)
        .with("reason", reason)
    }

    /// A resource URI the authorization rules cannot be decided on (`reason`, from
    /// `auth::resource_uri::Undecidable`).
    pub fn undecidable_name(reason: &str) -> Self {
        Self::new(
            ErrorKind::UndecidableName,
            "The resource URI cannot be checked against this route's rules: it holds a control \
             character, decodes to bytes that are not UTF-8, or is too long",
        )
        .with("reason", reason)
    }

    /// A subscription over the session's bounds (`reason`: `too-many`, `uri-too-long`,
    /// `listen-too-large`; `limit` the bound it would pass).
    pub fn subscription_limit(reason: &str, limit: u64) -> Self {
        let message = match reason {
            "too-many" => format!(
                "This session holds its maximum of {limit} resource subscriptions; unsubscribe one first"
            ),
            "uri-too-long" => {
                format!("This resource URI is longer than the {limit} bytes a subscription may name")
            }
            _ => format!(
                "With this subscription the session's listen request would pass {limit} bytes; unsubscribe one first"
            ),
        };
        Self::new(ErrorKind::SubscriptionLimit, message)
            .with("reason", reason)
            .with("limit", limit)
    }

    /// The signing keys could not be fetched.
    pub fn auth_unavailable(detail: &str) -> Self {
        Self::new(
            ErrorKind::AuthUnavailable,
            "The gateway cannot check tokens right now (signing keys unavailable); retry shortly",
        )
        .with("detail", detail)
    }

    /// An answer a route's interceptors must check that the gateway cannot read for them
    /// (`why`): refused (-32055).
    pub fn answer_unchecked(why: &str) -> Self {
        GatewayError::new(
            ErrorKind::AnswerUnchecked,
            "The answer could not be checked by the route's interceptors, so it was not passed on",
        )
        .with("reason", why)
    }
}
