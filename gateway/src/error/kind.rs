//! The error table: every kind of error the gateway answers itself, with its JSON-RPC code,
//! HTTP status, `Retry-After` and stable name.

/// What went wrong, with its JSON-RPC code and HTTP status. The table in docs/errors.md is this enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The body is not JSON. JSON-RPC -32700, HTTP 400.
    ParseError,
    /// JSON, but not one JSON-RPC message (batches included). JSON-RPC -32600, HTTP 400.
    InvalidRequest,
    /// The request's params lack what the protocol requires (a 2026-07-28 request bridged to
    /// a legacy backend without `_meta` protocolVersion or clientCapabilities). JSON-RPC
    /// -32602 (the spec's), HTTP 400.
    InvalidParams,
    /// `Mcp-Method`/`Mcp-Name`/`MCP-Protocol-Version` disagree with the body, are duplicated or
    /// undecodable. JSON-RPC -32020 (2026-07-28 spec), HTTP 400.
    HeaderMismatch,
    /// No route for this path. -32010, HTTP 404.
    NoRoute,
    /// No backend could take the request (all refused or none configured). -32011, HTTP 503
    /// with `Retry-After`.
    BackendUnavailable,
    /// The pool has backends, but none (of a known era) serves this request's protocol era: a
    /// 2026-07-28 request and only legacy backends, or a new (or moving) legacy session and
    /// only modern-only backends. -32005, HTTP 503 + `Retry-After` (a rolling upgrade may bring
    /// one back).
    NoBackendOfEra,
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
    /// A resource URI on a route with `authz` rules that the gateway cannot decide on safely
    /// (a control character, percent-decoding that is not UTF-8, over 8 KiB: `data.reason`).
    /// -32031, HTTP 400.
    UndecidableName,
    /// Bridging a legacy client to 2026-07-28 backends: the server asked for input the client
    /// did not declare the capability for in its `initialize` (`data.requiredCapabilities`,
    /// the spec's own code for it, so the client sees what a 2026-07-28 server says). -32021,
    /// HTTP 200.
    MissingClientCapability,
    /// Bridging: the server asked for input more rounds than the gateway's cap. -32032, HTTP 200.
    BridgeRoundsExceeded,
    /// Bridging: a legacy method with no 2026-07-28 translation. -32033, HTTP 200.
    NotBridged,
    /// Bridging: the client answered the gateway's server→client request with an error, or not
    /// in time. -32034, HTTP 200.
    InputNotGiven,
    /// Bridging: a 2026-07-28 answer the gateway cannot turn into a legacy one. -32035, HTTP 200.
    Untranslatable,
    /// The reverse bridge: a retry of an `input_required` call whose parked call another
    /// replica holds (`bridge.advertise-url`), and that replica could not be reached; the call
    /// stays parked there until its expiry. -32004, HTTP 503 + `Retry-After`.
    HolderUnreachable,
    /// A session's `resources/subscribe` (or a listen filter the gateway holds for a
    /// 2026-07-28 client) over the session's bounds: too many URIs, one URI too long, or a
    /// bridged session's upstream listen that would pass `max-body-bytes` (`data.reason`,
    /// `data.limit`). Nothing is stored or sent. -32036, HTTP 200 (one call's refusal: every
    /// client shows it, and the session goes on).
    SubscriptionLimit,
    /// The reverse bridge refuses a legacy backend's own request to a 2026-07-28 client
    /// (`elicitation/create`, `sampling/createMessage`, `roots/list`): the client did not
    /// declare the capability, no call can be parked for it, no one call is in flight to
    /// relate it to, or the client did not retry in time. Sent to the backend as the answer to
    /// its request (code and message only), never to a client. JSON-RPC -32603 (the backend's
    /// SDK fails that request; its call goes on or ends as it chooses).
    ServerRequestRefused,
    /// The reverse bridge does not carry this server→client request method of a legacy
    /// backend to a 2026-07-28 client. Sent to the backend like [`Self::ServerRequestRefused`].
    /// JSON-RPC -32601 (method not found, as the client would answer it).
    ServerRequestNotBridged,
    /// A virtual server: no member exposes this tool or prompt name, or owns this resource
    /// URI (unknown, filtered out by the member's `include`/`exclude`, or its member is not
    /// answering lists). -32037, HTTP 200 (a server's own answer to a call of an unknown name).
    UnknownName,
    /// A task the gateway recorded cannot be reached: the pod that holds it is gone (it left
    /// the pool or refuses connections), or it answers that it does not know a task it
    /// created (it restarted), or (legacy) the session moved to another pod since. -32038,
    /// HTTP 200 (an answer about one task; every client shows it).
    TaskLost,
    /// The credentials a pool's backends need could not be had: its token endpoint is
    /// unreachable, slow, failing or refuses the gateway's client, or the client secret cannot
    /// be read. Nothing was sent to a backend. -32039, HTTP 503 + `Retry-After`.
    UpstreamCredentials,
    /// A pool that acts for the caller (token exchange) has no token for this one: the
    /// authorization server refused to exchange its token (`invalid_grant`, `invalid_target`,
    /// ...), or it called with an API key, or with no token at all. -32040, HTTP 403.
    ExchangeRefused,
    /// An interceptor (SEP-2624) did not answer within its server's `timeout-ms` and is not
    /// fail-open. -32000 (the draft's code), HTTP 200 (one call's outcome).
    InterceptorTimeout,
    /// A validator of the route's interceptor chain denied the request or the answer
    /// (`data.validationErrors`: its messages). The draft's -32602 is the gateway's
    /// invalid-params, so -32050, HTTP 200.
    InterceptorDenied,
    /// An interceptor that is not fail-open failed: its server down, or its answer garbage or
    /// an error, or its list cannot be had. The draft's -32603 is taken, so -32051, HTTP 200.
    InterceptorFailed,
    /// A mutator returned a payload the event may not carry (not an object, a changed tool
    /// name, not a result of the event's shape), and it is not fail-open. -32052, HTTP 200.
    InterceptorInvalidMutation,
    /// The payload is larger than an interceptor server's `max-payload-bytes` (the interceptor
    /// is not fail-open), or more interceptors hook the event than one call may run. -32053,
    /// HTTP 200.
    InterceptorLimit,
    /// A route's interceptors must check an answer the gateway cannot read for them (larger
    /// than it holds, or in a content coding it cannot decode): refused, never passed on
    /// unchecked. -32055, HTTP 200 (the request reached its backend; its answer is refused).
    AnswerUnchecked,
    /// `audit.required` is set and the audit sink cannot write now (its file cannot be opened
    /// or written, standard output fails, or its queue is full): a `tools/call`, `prompts/get`
    /// or `resources/read` is refused before it reaches a backend. -32041, HTTP 503 +
    /// `Retry-After`.
    AuditUnavailable,
    /// A call of a tool whose definition a pool's `tool-pinning: enforce` holds back: it
    /// changed (or is new) and no operator approved it yet, or one rejected it, or the gateway
    /// never saw it listed. -32045, HTTP 200 (an answer to one call, which every client shows).
    ToolQuarantined,
}

impl ErrorKind {
    /// The JSON-RPC error code.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::ParseError => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::HeaderMismatch => -32020,
            ErrorKind::NoRoute => -32010,
            ErrorKind::BackendUnavailable => -32011,
            ErrorKind::NoBackendOfEra => -32005,
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
            ErrorKind::UndecidableName => -32031,
            ErrorKind::MissingClientCapability => -32021,
            ErrorKind::BridgeRoundsExceeded => -32032,
            ErrorKind::NotBridged => -32033,
            ErrorKind::InputNotGiven => -32034,
            ErrorKind::Untranslatable => -32035,
            ErrorKind::HolderUnreachable => -32004,
            ErrorKind::SubscriptionLimit => -32036,
            ErrorKind::ServerRequestRefused => -32603,
            ErrorKind::ServerRequestNotBridged => -32601,
            ErrorKind::UnknownName => -32037,
            ErrorKind::TaskLost => -32038,
            ErrorKind::UpstreamCredentials => -32039,
            ErrorKind::ExchangeRefused => -32040,
            ErrorKind::InterceptorTimeout => -32000,
            ErrorKind::InterceptorDenied => -32050,
            ErrorKind::InterceptorFailed => -32051,
            ErrorKind::InterceptorInvalidMutation => -32052,
            ErrorKind::InterceptorLimit => -32053,
            ErrorKind::AnswerUnchecked => -32055,
            ErrorKind::AuditUnavailable => -32041,
            ErrorKind::ToolQuarantined => -32045,
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
            ErrorKind::ParseError
            | ErrorKind::InvalidRequest
            | ErrorKind::InvalidParams
            | ErrorKind::HeaderMismatch => 400,
            ErrorKind::NoRoute | ErrorKind::SessionNotFound => 404,
            ErrorKind::BodyTooLarge => 413,
            ErrorKind::BackendLost | ErrorKind::UpstreamTimeout | ErrorKind::SessionRequired => 200,
            ErrorKind::HostNotAllowed => 421,
            ErrorKind::OriginNotAllowed => 403,
            ErrorKind::BackendUnavailable
            | ErrorKind::SessionLimit
            | ErrorKind::Overloaded
            | ErrorKind::StoreUnavailable
            | ErrorKind::NoBackendOfEra
            | ErrorKind::HolderUnreachable => 503,
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
            ErrorKind::UndecidableName => 400,
            // answers to one bridged call: every legacy client shows a JSON-RPC error on 200
            ErrorKind::MissingClientCapability
            | ErrorKind::BridgeRoundsExceeded
            | ErrorKind::NotBridged
            | ErrorKind::InputNotGiven
            | ErrorKind::Untranslatable => 200,
            ErrorKind::SubscriptionLimit => 200,
            // answers to a backend's request, in the body of a POST the gateway sends: no
            // HTTP answer of their own
            ErrorKind::ServerRequestRefused | ErrorKind::ServerRequestNotBridged => 200,
            ErrorKind::UnknownName => 200,
            ErrorKind::TaskLost => 200,
            ErrorKind::UpstreamCredentials => 503,
            ErrorKind::ExchangeRefused => 403,
            // one call's outcome: every client shows a JSON-RPC error on 200
            ErrorKind::InterceptorTimeout
            | ErrorKind::InterceptorDenied
            | ErrorKind::InterceptorFailed
            | ErrorKind::InterceptorInvalidMutation
            | ErrorKind::InterceptorLimit => 200,
            ErrorKind::AnswerUnchecked => 200,
            ErrorKind::AuditUnavailable => 503,
            ErrorKind::ToolQuarantined => 200,
        }
    }

    /// `Retry-After` seconds, for errors a client should retry later.
    pub fn retry_after_secs(self) -> Option<u32> {
        match self {
            ErrorKind::BackendUnavailable
            | ErrorKind::StoreUnavailable
            | ErrorKind::NoBackendOfEra
            | ErrorKind::HolderUnreachable => Some(1),
            ErrorKind::SessionLimit => Some(5),
            ErrorKind::RateLimited | ErrorKind::Overloaded => Some(1),
            ErrorKind::AuthUnavailable | ErrorKind::UpstreamCredentials => Some(1),
            ErrorKind::AuditUnavailable => Some(1),
            _ => None,
        }
    }

    /// Stable name, used as `data.kind` and as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "parse-error",
            ErrorKind::InvalidRequest => "invalid-request",
            ErrorKind::InvalidParams => "invalid-params",
            ErrorKind::HeaderMismatch => "header-mismatch",
            ErrorKind::NoRoute => "no-route",
            ErrorKind::BackendUnavailable => "backend-unavailable",
            ErrorKind::NoBackendOfEra => "no-backend-of-era",
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
            ErrorKind::UndecidableName => "name-undecidable",
            ErrorKind::MissingClientCapability => "missing-client-capability",
            ErrorKind::BridgeRoundsExceeded => "bridge-rounds-exceeded",
            ErrorKind::NotBridged => "not-bridged",
            ErrorKind::InputNotGiven => "input-not-given",
            ErrorKind::Untranslatable => "untranslatable",
            ErrorKind::HolderUnreachable => "holder-unreachable",
            ErrorKind::SubscriptionLimit => "subscription-limit",
            ErrorKind::ServerRequestRefused => "server-request-refused",
            ErrorKind::ServerRequestNotBridged => "server-request-not-bridged",
            ErrorKind::UnknownName => "unknown-name",
            ErrorKind::TaskLost => "task-lost",
            ErrorKind::UpstreamCredentials => "upstream-credentials",
            ErrorKind::ExchangeRefused => "exchange-refused",
            ErrorKind::InterceptorTimeout => "interceptor-timeout",
            ErrorKind::InterceptorDenied => "interceptor-denied",
            ErrorKind::InterceptorFailed => "interceptor-failed",
            ErrorKind::InterceptorInvalidMutation => "interceptor-invalid-mutation",
            ErrorKind::InterceptorLimit => "interceptor-limit",
            ErrorKind::AnswerUnchecked => "answer-unchecked",
            ErrorKind::AuditUnavailable => "audit-unavailable",
            ErrorKind::ToolQuarantined => "tool-quarantined",
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
