//! The validated, typed configuration the gateway runs on: the buffer between the stable file
//! format and internal details. `validate.rs` builds it ([`Config::from_file`]), returning every
//! problem at once, each with its key path.

use super::mode::Mode;
pub use super::problems::ConfigError;
use super::sessions::StoreConfig;
use std::net::SocketAddr;
use std::time::Duration;

/// Default client-facing listener.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default largest request body: 4 MiB.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// The whole gateway configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Client-facing listener. Default `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// `Host` values the listener answers (globs, case-insensitive; `name:*` also matches a
    /// bare `name`). Empty: any. Others get 421 / -32009 (DNS-rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted (globs, case-insensitive). Empty: any. A request without an
    /// `Origin` (not from a browser) is always accepted. Others get 403 / -32008.
    pub allowed_origins: Vec<String>,
    /// Admin listener for `/metrics`, `/healthz`, `/readyz`. Default: none.
    pub admin: Option<SocketAddr>,
    /// Proxy worker threads. Default: the number of CPUs.
    pub threads: usize,
    /// Largest request body accepted, in bytes; larger ones get 413. Default 4 MiB.
    pub max_body_bytes: u64,
    /// Gateway-owned sessions (stateful and auto routes).
    pub sessions: SessionConfig,
    /// Gateway-wide admission limits.
    pub limits: Limits,
    /// Tool names that may appear as the `tool` label of `mcpgw_tool_calls_total` (others
    /// count as `other`): tool names come from clients, so only a configured list is bounded.
    pub metric_tools: Vec<String>,
    /// Upstream pools; routes refer to them by index.
    pub pools: Vec<PoolConfig>,
    /// Routes in match order.
    pub routes: Vec<RouteConfig>,
    /// Who may call (`auth`). Default: anyone.
    pub auth: Option<super::AuthConfig>,
    /// TLS on the listener (`listen-tls`). Default: plain HTTP.
    pub listen_tls: Option<super::ListenTls>,
    /// OpenTelemetry traces. Default: off. Read at start (a reload does not change it).
    pub tracing: Option<super::TracingConfig>,
    /// The admin API's bearer token; without one, mutating admin calls are refused.
    pub admin_token: Option<super::AdminToken>,
    /// Client header, body and idle keep-alive timeouts.
    pub client_timeouts: super::ClientTimeouts,
    /// The era bridge (`bridge`): pooled backend sessions' bounds.
    pub bridge: super::BridgeConfig,
    /// `tasks`: the task records.
    pub tasks: super::tasks::TasksConfig,
    /// `cache`: the response cache.
    pub cache: super::cache::CacheConfig,
    /// `audit`: the audit trail. Default: off. A reload applies a changed section.
    pub audit: Option<super::AuditConfig>,
    /// `interceptors`: the interceptor servers, in name order (routes name them by index).
    pub interceptors: Vec<super::InterceptorServerConfig>,
}

/// Gateway-owned sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// A session unused this long is removed (with a best-effort DELETE upstream). Default 30 min.
    pub idle_timeout: Duration,
    /// Most sessions held at once; further initializes get -32016. Default 100 000.
    pub max: usize,
    /// The gateway holds each session's standalone stream (the backend's GET) itself and hands
    /// its events to whichever client GET is attached, buffering them in between, so
    /// server-initiated requests never fall into a gap (a client that calls before its GET
    /// reached the backend, a reconnect, a move to another backend). Opened when the client's
    /// `initialize` declares sampling, elicitation or roots, or at the client's first GET.
    /// Default true, with every store: with Redis one replica at a time holds a session's
    /// stream (a lease in the store) and the others read its events through Redis.
    pub hold_streams: bool,
    /// Where sessions live. Default: this process's memory.
    pub store: StoreConfig,
    /// Resumable streams (`sessions.resume`).
    pub resume: super::sessions::ResumeConfig,
    /// Sessions of a backend known dead (a health probe marked it down, or it refused a
    /// connection) moved in the background per second by this replica, before their next
    /// call (`session/evacuate.rs`); 0 moves them only when their next call comes. Default 100.
    pub background_moves_per_second: u32,
    /// Sessions one authenticated principal may hold at once (`sessions.max-per-principal`;
    /// anonymous callers are not one principal). Default 256.
    pub max_per_principal: usize,
    /// `resources/subscribe` URIs one session may hold, and URIs of one listen filter the
    /// gateway holds for a 2026-07-28 client (`sessions.max-subscriptions`). Default 64.
    pub max_subscriptions: usize,
    /// Longest URI one subscription may name (`sessions.max-subscription-uri-bytes`).
    /// Default 2048.
    pub max_subscription_uri_bytes: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            idle_timeout: Duration::from_secs(1800),
            max: 100_000,
            hold_streams: true,
            store: StoreConfig::Memory,
            resume: super::sessions::ResumeConfig::default(),
            background_moves_per_second: 100,
            max_per_principal: 256,
            max_subscriptions: 64,
            max_subscription_uri_bytes: 2048,
        }
    }
}

/// Gateway-wide admission limits; `None` means unlimited.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Header whose value identifies a client (an API key); the client IP otherwise.
    pub client_id_header: Option<String>,
    /// Concurrent requests through the gateway.
    pub max_inflight: Option<usize>,
    /// Open server→client SSE streams (GET).
    pub max_streams: Option<usize>,
    /// Client connections open at once (the listener refuses the ones over it).
    pub max_connections: Option<usize>,
    /// Client connections open at once from one client address (`None`: the default share,
    /// `downstream::cap`).
    pub max_connections_per_client: Option<usize>,
    /// Sessions held by one client identity.
    pub max_sessions_per_client: Option<usize>,
    /// Bytes of members' answers merged lists hold at once, in all (a quarter per caller).
    pub max_merged_list_bytes: usize,
    /// Token bucket per client identity.
    pub rate: Option<Rate>,
    /// Token bucket per client identity and tool, for the tools matching the globs.
    pub tool_rate: Option<(Rate, Vec<super::Pattern>)>,
}

/// The default of `limits.max-merged-list-bytes` (256 MiB).
pub const DEFAULT_MAX_MERGED_LIST_BYTES: usize = 256 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            client_id_header: None,
            max_inflight: None,
            max_streams: None,
            max_connections: None,
            max_connections_per_client: None,
            max_sessions_per_client: None,
            max_merged_list_bytes: DEFAULT_MAX_MERGED_LIST_BYTES,
            rate: None,
            tool_rate: None,
        }
    }
}

/// A token bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Sustained requests per second.
    pub per_second: f64,
    /// Requests allowed at once after idling.
    pub burst: u32,
}

/// Per-route limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteLimits {
    /// Concurrent requests on this route.
    pub max_inflight: Option<usize>,
    /// Open GET SSE streams on this route.
    pub max_streams: Option<usize>,
    /// Deadline for a whole request/answer exchange with the backend (streams excepted).
    pub timeout: Option<Duration>,
    /// Deadlines for `tools/call` of tools matching each glob (first match wins).
    pub tool_timeouts: Vec<(super::Pattern, Duration)>,
}

/// One way a backend answers "I do not know this session". All given fields must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFoundRule {
    /// HTTP status.
    pub status: u16,
    /// JSON-RPC error code; `None` matches any (or no) body.
    pub code: Option<i64>,
    /// Case-insensitive substring of the error message.
    pub message_contains: Option<String>,
}

/// The defaults, from what the real servers answer: Python SDK 404 -32600, TypeScript SDK
/// 404 -32001 (so: any 404), server-everything 400 -32000 "...session...".
pub fn default_not_found() -> Vec<NotFoundRule> {
    vec![
        NotFoundRule {
            status: 404,
            code: None,
            message_contains: None,
        },
        NotFoundRule {
            status: 400,
            code: Some(-32000),
            message_contains: Some("session".into()),
        },
    ]
}

/// One upstream pool.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolConfig {
    /// Name used in routes, metrics and errors.
    pub name: String,
    /// Which era the backends serve. Default [`EraSetting::Detect`].
    pub era: EraSetting,
    /// Backend addresses (IP:port).
    pub backends: Vec<SocketAddr>,
    /// Balancing algorithm. Default round-robin.
    pub balance: Balance,
    /// Host header sent upstream. Default: the backend's own `ip:port`, which loopback MCP
    /// servers accept (they answer 421 to a foreign Host).
    pub host: Option<String>,
    /// Upstream connect timeout. Default 2 s.
    pub connect_timeout: Duration,
    /// Upstream read timeout between bytes (SSE keepalives must come faster). Default 300 s.
    pub read_timeout: Duration,
    /// Other backends tried after a connection failure. Default 2.
    pub retries: usize,
    /// How long a backend that refused a connection is skipped. Default 2 s.
    pub failure_cooldown: Duration,
    /// Idle upstream connections kept per backend. Default 128.
    pub max_idle_connections: usize,
    /// How backends of this pool say a session is unknown. Default [`default_not_found`].
    pub session_not_found: Vec<NotFoundRule>,
    /// How long sessions stay on a draining backend before they move. Default 120 s.
    pub drain_timeout: Duration,
    /// Dynamic membership source. Default: the static `backends` only.
    pub discovery: Option<Discovery>,
    /// Active health checks. Default: a TCP connect every 2 s; `health: {enabled: false}`
    /// leaves passive marking only.
    pub health: Option<HealthCheck>,
    /// TLS to the backends. Default: plain HTTP.
    pub tls: Option<super::PoolTls>,
    /// Identity headers sent to the backends. Default: none.
    pub identity_headers: super::IdentityHeaders,
    /// `upstream-auth`: the credentials the pool's backends get.
    pub upstream_auth: super::UpstreamAuth,
    /// `tasks: shared`: every backend reads every task (a task's polls are balanced); default
    /// `own`: a task lives in the pod that created it.
    pub tasks_shared: bool,
    /// `tool-pinning`: what the gateway does with the tool definitions of the pool's lists.
    /// Default off.
    pub tool_pinning: super::ToolPinning,
}

/// A dynamic membership source; the static `backends` are the initial members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// A file of `ip:port` lines (`#` comments), re-read when it changes.
    File {
        /// The file.
        path: std::path::PathBuf,
        /// How often to look for changes.
        interval: Duration,
    },
    /// A DNS name re-resolved on an interval (a Kubernetes headless Service: one address per pod).
    Dns {
        /// The name to resolve.
        name: String,
        /// The port of every resolved address.
        port: u16,
        /// How often to re-resolve.
        interval: Duration,
        /// A DNS server to ask instead of the system resolver.
        resolver: Option<SocketAddr>,
    },
}

/// An active health probe: a TCP connect, or with a `path` an HTTP GET where any answer below
/// 500 counts as alive (session servers refuse sessionless requests with 4xx, and that still
/// means alive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// Path probed with GET. Default: none (a TCP connect is the probe).
    pub path: Option<String>,
    /// Between probes. Default 2 s.
    pub interval: Duration,
    /// Probe timeout. Default 1 s.
    pub timeout: Duration,
    /// Failed probes in a row that mark a backend down. Default 2.
    pub fall: u32,
    /// Good probes in a row that bring it back. Default 2.
    pub rise: u32,
}

/// How a pool knows its backends' protocol era (`pools.*.era`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraSetting {
    /// Each backend is probed with `server/discover` when it joins or comes back up (default).
    #[default]
    Detect,
    /// Every backend is declared to serve this era; nothing is probed.
    Fixed(mcp_wire::BackendEra),
}

/// Balancing algorithm of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// Each backend in turn.
    RoundRobin,
    /// The backend with the fewest requests in flight.
    LeastRequests,
    /// Two random backends, the one with fewer requests in flight.
    PowerOfTwoChoices,
}

/// Which path a legacy (2025-era) client takes on a route whose backends serve both eras.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DualBackends {
    /// Native sessions on the backend, pinned as on a legacy pool (the default: the server's
    /// own legacy path, with everything it does on a session, server requests at any time
    /// included).
    #[default]
    Native,
    /// The bridge: 2026-07-28 requests balanced per request, nothing pinned.
    Bridge,
}

/// How a route's routing rules on `Mcp-Name` and its `authz` rules compare names and URIs
/// (`name-match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameMatch {
    /// Exact code points (the default): `Admin_Delete` and `admin_delete` are two names.
    #[default]
    Exact,
    /// Both sides NFKC-normalized, then lowercased, for backends that normalize names.
    Folded,
}

/// How a route matches the request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathMatch {
    /// The whole path, query excluded.
    Exact(String),
    /// Any path starting with this.
    Prefix(String),
}

/// One route.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteConfig {
    /// Which request paths this route takes.
    pub path: PathMatch,
    /// Session handling. Default stateless.
    pub mode: Mode,
    /// Index into [`Config::pools`] used when no rule matches.
    pub pool: usize,
    /// Path sent upstream (replacing an exact path, or the prefix). Default: the request path.
    pub upstream_path: Option<String>,
    /// Answer header/body disagreement with 400 / -32020 instead of forwarding. Default true.
    pub check_headers: bool,
    /// `cache`: whether cacheable results may be answered from the cache here (with the
    /// top-level `cache.enabled`). Default true.
    pub cache: bool,
    /// Admission limits and deadlines of this route.
    pub limits: RouteLimits,
    /// Rules, first match wins.
    pub rules: Vec<RuleConfig>,
    /// Whether a caller is required. Default: required once `auth` is set.
    pub auth: super::RouteAuth,
    /// Authorization rules, first match decides. Default: none (any caller may call anything).
    pub authz: Vec<super::AuthzRule>,
    /// Request capture. Default: off.
    pub capture: Option<super::CaptureConfig>,
    /// Legacy clients on dual-era backends (`dual-backends`). Default: native.
    pub dual_backends: DualBackends,
    /// How rules compare names and URIs (`name-match`). Default: exact.
    pub name_match: NameMatch,
    /// `mode: virtual`: the virtual server this route serves (its members; `mode` and `pool`
    /// are then its first member's, unused).
    pub virtual_server: Option<super::VirtualServer>,
    /// `interceptors`: indices into [`Config::interceptors`], in the route's order. Default:
    /// none.
    pub interceptors: Vec<usize>,
}

/// A routing rule: globs on method and name, and the pool they send to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleConfig {
    /// Glob on the MCP method; `None` matches any.
    pub method: Option<super::Pattern>,
    /// Glob on the MCP name (tool or prompt name, resource URI); `None` matches any.
    pub name: Option<super::Pattern>,
    /// Index into [`Config::pools`].
    pub pool: usize,
}
