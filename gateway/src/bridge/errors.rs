//! The named constructors of the era bridges' errors (both bridges); their kinds, JSON-RPC codes
//! and HTTP statuses are rows of the error table (`crate::error`).

use crate::error::{ErrorKind, GatewayError};
use serde_json::Value;

impl GatewayError {
    /// A bridged call (`bridge`: `forward`, a legacy client on 2026-07-28 backends, or
    /// `reverse`, a 2026-07-28 client on legacy backends) past its route's `timeout-ms` or
    /// `tool-timeouts` deadline: the native path's -32012, cancelled upstream by closing the
    /// exchange. Which backend was answering is not known at that point, so none is named.
    pub fn bridged_deadline(pool: &str, bridge: &str, after: std::time::Duration) -> Self {
        Self::new(
            ErrorKind::UpstreamTimeout,
            format!(
                "The bridged call did not finish within {} ms; the request was cancelled",
                after.as_millis()
            ),
        )
        .with("pool", pool)
        .with("bridge", bridge)
        .with("timeoutMs", after.as_millis() as u64)
    }

    /// A bridged session's request whose id is that of another of its requests still in
    /// flight: ids are unique per session while in flight (MCP), and a cancellation for it
    /// could not say which call it ends. The id itself is not repeated (it is the answer's).
    pub fn duplicate_request_id() -> Self {
        Self::new(
            ErrorKind::InvalidRequest,
            "Invalid request: a request of this session with the same id is still in flight",
        )
        .with("reason", "duplicate-id")
    }

    /// Every pooled backend session allowed (`scope`: `backend` or `gateway`, at `limit`) is
    /// busy with requests in flight: none can be closed to make room for another client's.
    pub fn pooled_sessions_full(scope: &str, limit: usize) -> Self {
        Self::new(
            ErrorKind::Overloaded,
            format!("The gateway holds its limit of {limit} pooled backend sessions ({scope}), all busy; retry shortly"),
        )
        .with("scope", scope)
        .with("reason", "pooled-sessions")
        .with("limit", limit)
    }

    /// A call the backend asked for input cannot be parked: the gateway (`scope: gateway`) or
    /// this principal (`scope: principal`; anonymous callers by peer address) holds its limit
    /// of parked calls (`bridge.parked`). The backend's call was cancelled.
    pub fn parked_calls_full(scope: &str, limit: usize) -> Self {
        Self::new(
            ErrorKind::Overloaded,
            format!("The server asked for input, but {limit} calls ({scope}) already wait for theirs; the call was cancelled: answer those first or retry shortly"),
        )
        .with("scope", scope)
        .with("reason", "parked-calls")
        .with("limit", limit)
    }

    /// A session-era method (`initialize`, `logging/setLevel`, `resources/subscribe`,
    /// `resources/unsubscribe`) in a 2026-07-28 request on legacy backends: it would change the
    /// pooled backend session others use, and 2026-07-28 has no such method.
    pub fn session_method(method: &str) -> Self {
        Self::new(
            ErrorKind::NotBridged,
            format!("`{method}` is not a 2026-07-28 method: the gateway keeps the backend session itself (send the settings in each request's `_meta`; listen with `subscriptions/listen`)"),
        )
        .with("method", method)
        .with("reason", "session-method")
    }

    /// A retry of an `input_required` call that the gateway cannot take (`reason`: `forged`,
    /// `expired`, `other-principal`, `other-request`, `unknown-call`, `missing-response`).
    pub fn bad_request_state(reason: &str, detail: &str) -> Self {
        Self::new(
            ErrorKind::InvalidParams,
            format!("Invalid params: the requestState cannot be used: {detail}"),
        )
        .with("reason", reason)
        .with("detail", detail)
    }

    /// A 2026-07-28 request whose params lack what the protocol requires (`detail`).
    pub fn invalid_params(detail: &str) -> Self {
        Self::new(
            ErrorKind::InvalidParams,
            format!("Invalid params: {detail}"),
        )
        .with("detail", detail)
    }

    /// The server asked for input (`method`) whose capability the client did not declare.
    pub fn missing_client_capability(method: &str, required: Value) -> Self {
        Self::new(
            ErrorKind::MissingClientCapability,
            format!(
                "The server needs `{method}` from the client, which did not declare that capability in its initialize"
            ),
        )
        .with("method", method)
        .with("requiredCapabilities", required)
    }

    /// The server asked for input more than `limit` rounds.
    pub fn bridge_rounds_exceeded(method: &str, limit: usize) -> Self {
        Self::new(
            ErrorKind::BridgeRoundsExceeded,
            format!("The server asked for input more than {limit} times for one `{method}`"),
        )
        .with("method", method)
        .with("limit", limit)
    }

    /// A legacy method with no 2026-07-28 translation.
    pub fn not_bridged(method: &str, reason: &str) -> Self {
        Self::new(
            ErrorKind::NotBridged,
            format!("`{method}` cannot be bridged to a 2026-07-28 server: {reason}"),
        )
        .with("method", method)
        .with("reason", reason)
    }

    /// The client refused (`client_error`) or did not answer (`None`, after `timeout_ms`) the
    /// gateway's `method` request for input `key`.
    pub fn input_not_given(
        method: &str,
        key: &str,
        client_error: Option<Value>,
        timeout_ms: u64,
    ) -> Self {
        let (message, reason) = match &client_error {
            Some(_) => (
                format!("The client refused the server's `{method}`"),
                "error",
            ),
            None => (
                format!("The client did not answer the server's `{method}` within {timeout_ms} ms"),
                "timeout",
            ),
        };
        let e = Self::new(ErrorKind::InputNotGiven, message)
            .with("method", method)
            .with("key", key)
            .with("reason", reason);
        match client_error {
            Some(err) => e.with("clientError", err),
            None => e.with("timeoutMs", timeout_ms),
        }
    }

    /// A 2026-07-28 answer with no legacy translation.
    pub fn untranslatable(pool: &str, detail: &str) -> Self {
        Self::new(
            ErrorKind::Untranslatable,
            format!("The 2026-07-28 server's answer cannot be given to a legacy client: {detail}"),
        )
        .with("pool", pool)
        .with("detail", detail)
    }

    /// A retry of an `input_required` call forwarded to the replica holding its parked call,
    /// which could not be reached (`detail` for a person; the holder's address is not shown).
    pub fn holder_unreachable(detail: &str) -> Self {
        Self::new(
            ErrorKind::HolderUnreachable,
            "The gateway replica holding this call could not be reached; the call stays parked there until its requestState expires: retry shortly",
        )
        .with("reason", "holder-unreachable")
        .with("detail", detail)
    }

    /// A legacy backend's request for input (`elicitation/create`, ...) whose capability the
    /// 2026-07-28 client did not declare: refused to the backend (the client hears -32021).
    pub fn capability_not_declared_upstream() -> Self {
        Self::new(
            ErrorKind::ServerRequestRefused,
            "the 2026-07-28 client did not declare this capability (mcp-gateway)",
        )
    }

    /// A legacy backend's request for input while the gateway holds its limit of parked
    /// calls: refused to the backend (the client hears -32018 `parked-calls`).
    pub fn no_room_to_park_upstream() -> Self {
        Self::new(
            ErrorKind::ServerRequestRefused,
            "the gateway holds its limit of calls waiting for input (mcp-gateway)",
        )
    }

    /// A legacy backend's request for input on its session's GET stream while not exactly one
    /// call is in flight in that session: nothing to relate it to, refused to the backend.
    pub fn no_call_for_server_request() -> Self {
        Self::new(
            ErrorKind::ServerRequestRefused,
            "mcp-gateway: no single call in flight to relate this request to",
        )
    }

    /// A legacy backend's request for input (not an elicitation, which is cancelled) whose
    /// 2026-07-28 client did not retry within `bridge.input-ttl-s`: refused to the backend.
    pub fn input_not_retried_upstream() -> Self {
        Self::new(
            ErrorKind::ServerRequestRefused,
            "the 2026-07-28 client did not answer in time (mcp-gateway)",
        )
    }

    /// A legacy backend's request (`method`) during a call that the reverse bridge does not
    /// carry to a 2026-07-28 client: refused to the backend, so its call goes on.
    pub fn server_request_not_bridged(method: &str) -> Self {
        Self::new(
            ErrorKind::ServerRequestNotBridged,
            format!("the gateway does not bridge `{method}` to this 2026-07-28 client"),
        )
    }
}
