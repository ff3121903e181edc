//! The config file as users write it: serde structs with kebab-case keys.
//! Nothing here is trusted; `internal.rs` validates it into the typed [`Config`](super::Config).
//! Addresses stay strings and unknown keys are captured rather than rejected by serde, so that
//! validation can list every problem at once, each with its key path.

use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

pub use super::auth::FileMatch;
pub use super::problems::Unknown;

/// Top level of the config file. Defaults are documented on the internal [`super::Config`].
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileConfig {
    /// The directory of the file it was read from (not a key): relative `tool-pinning` paths
    /// are read from there.
    #[serde(skip)]
    #[schemars(skip)]
    pub base_dir: Option<std::path::PathBuf>,
    /// `listen`: the MCP listener address.
    pub listen: Option<String>,
    /// `allowed-hosts`: Host globs the listener serves.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// `allowed-origins`: Origin globs that may call.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// `admin`: the admin listener address.
    pub admin: Option<String>,
    /// `threads`: worker threads.
    pub threads: Option<usize>,
    /// `max-body-bytes`: largest request body.
    pub max_body_bytes: Option<u64>,
    /// `check-headers`: default for routes.
    pub check_headers: Option<bool>,
    /// `sessions`: gateway-owned sessions.
    #[serde(default)]
    pub sessions: FileSessions,
    /// `limits`: gateway-wide admission limits.
    #[serde(default)]
    pub limits: FileLimits,
    /// `metric-tools`: tool names allowed as metric labels.
    #[serde(default)]
    pub metric_tools: Vec<String>,
    /// `pools`: upstream pools by name.
    #[serde(default)]
    pub pools: BTreeMap<String, FilePool>,
    /// `routes`: routes in match order.
    #[serde(default)]
    pub routes: Vec<FileRoute>,
    /// `auth`: who may call (JWT bearer tokens, API keys); see `config/auth.rs`.
    pub auth: Option<super::auth::FileAuth>,
    /// `listen-tls`: TLS on the listener.
    pub listen_tls: Option<super::auth::FileListenTls>,
    /// `tracing`: OpenTelemetry traces exported by OTLP. Off unless set.
    pub tracing: Option<super::tracing::FileTracing>,
    /// `admin-token`: where the admin API's bearer token comes from.
    pub admin_token: Option<FileAdminToken>,
    /// `client-timeouts`: how long a client may take to send a request, or idle between them.
    #[serde(default)]
    pub client_timeouts: FileClientTimeouts,
    /// `bridge`: the era bridge (pooled backend sessions for 2026-07-28 clients on legacy backends).
    #[serde(default)]
    pub bridge: super::bridge::FileBridge,
    /// `tasks`: where the tasks backends create live, kept so their polls reach the pod that holds them.
    #[serde(default)]
    pub tasks: super::tasks::FileTasks,
    /// `cache`: cacheable 2026-07-28 results answered at the gateway, as their `ttlMs` and `cacheScope` allow.
    #[serde(default)]
    pub cache: super::cache::FileCache,
    /// `audit`: the audit trail (who called what, decisions, sessions, admin actions). Off unless set.
    pub audit: Option<super::audit::FileAudit>,
    /// `interceptors`: the interceptor servers (SEP-2624) routes' chains name, by name.
    #[serde(default)]
    pub interceptors:
        std::collections::BTreeMap<String, super::interceptors::FileInterceptorServer>,
    /// Keys this version does not know.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Gateway-owned sessions of stateful routes.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileSessions {
    /// Seconds an idle session lives before it ends (with a DELETE upstream). Default 1800.
    pub idle_timeout_s: Option<u64>,
    /// Most sessions at once; then `initialize` gets -32016. Default 100000.
    pub max: Option<usize>,
    /// Whether the gateway holds each session's GET stream. Default true, with every store.
    pub hold_streams: Option<bool>,
    /// Where sessions live: `memory` (default) or `redis` (shared by replicas).
    #[schemars(extend("enum" = ["memory", "redis", null]))]
    pub store: Option<String>,
    /// The Redis store, used with `store: redis`.
    pub redis: Option<FileRedis>,
    /// Resumable streams (gateway-owned SSE event ids, `Last-Event-ID` replay).
    #[serde(default)]
    pub resume: FileResume,
    /// Sessions of a backend known dead moved to survivors in the background, per second per
    /// replica, before their next call; 0: only when their next call comes. Default 100.
    pub background_moves_per_second: Option<u32>,
    /// Sessions one authenticated principal may hold at once (with `auth`); then its
    /// `initialize` gets -32016 (scope `client`). Default 256.
    pub max_per_principal: Option<usize>,
    /// `resources/subscribe` URIs one session may hold (and URIs in one `subscriptions/listen`
    /// filter the gateway holds itself); then -32036. Default 64.
    pub max_subscriptions: Option<usize>,
    /// Longest URI one subscription may name, in bytes; longer gets -32036. Default 2048.
    pub max_subscription_uri_bytes: Option<usize>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `sessions.resume`: resumable streams.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileResume {
    /// Gateway-owned SSE event ids, buffering and `Last-Event-ID` replay. Default true.
    pub enabled: Option<bool>,
    /// Events kept per stream. Default 1000.
    pub max_events: Option<usize>,
    /// Bytes kept per stream. Default 1048576.
    pub max_bytes: Option<usize>,
    /// Bytes kept across every stream of the process; past it, the buffers of streams nobody
    /// reads are dropped, the one unread longest first. At least `max-bytes`. Default 67108864.
    pub max_buffered_bytes: Option<usize>,
    /// Seconds a stream stays replayable after it ended. Default 60.
    pub window_s: Option<u64>,
    /// The `retry:` advice of priming events, in milliseconds. Default 1000.
    pub retry_ms: Option<u64>,
    /// Seconds between keep-alive comments on idle client streams. Default 15.
    pub keep_alive_s: Option<u64>,
    /// SSE polling: close a client's POST answer stream after this many milliseconds. Off unless set.
    pub poll_after_ms: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `sessions.redis`: the shared store.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRedis {
    /// redis:// or rediss:// URLs (cluster: the seed nodes).
    #[serde(default)]
    pub urls: Vec<String>,
    /// Redis Cluster. Default false.
    pub cluster: Option<bool>,
    /// Redis Sentinel: the primary of `master-name`, as the Sentinels at `nodes` name it
    /// (instead of `urls`).
    pub sentinel: Option<FileSentinel>,
    /// Prefix of every key. Default `mcpgw:`.
    pub key_prefix: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `sessions.redis.sentinel`: where the Sentinels are and which primary they watch.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileSentinel {
    /// The name the Sentinels monitor the primary by (`sentinel monitor <name> ...`).
    pub master_name: Option<String>,
    /// redis:// URLs of the Sentinels (not of the Redis servers).
    #[serde(default)]
    pub nodes: Vec<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Gateway-wide admission limits.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileLimits {
    /// Header naming the client for per-client limits; the client IP otherwise.
    pub client_id_header: Option<String>,
    /// Most requests in flight. Unlimited unless set.
    pub max_inflight: Option<usize>,
    /// Most open server-to-client SSE streams (GET). Unlimited unless set.
    pub max_streams: Option<usize>,
    /// Most client connections open at once (each one costs memory whether or not it sends
    /// anything); a connection over it is answered 503 -32018 and closed. Unlimited unless set.
    pub max_connections: Option<usize>,
    /// Most client connections open at once from one client address (an IPv6 one by its /64;
    /// clients behind one NAT or proxy share it); one over it is answered 503 -32018 and
    /// closed. Default 1024, and at most half of `max-connections` when that is set.
    pub max_connections_per_client: Option<usize>,
    /// Most sessions per client. Unlimited unless set.
    pub max_sessions_per_client: Option<usize>,
    /// Most bytes of members' answers that virtual servers' merged lists hold at once, in all
    /// (one caller may hold a quarter of it); a merge past it is answered 503 -32018. Default
    /// 268435456 (256 MiB).
    pub max_merged_list_bytes: Option<usize>,
    /// Requests per client: a token bucket.
    pub rate: Option<FileRate>,
    /// Tool calls per client and tool, for the tools matching `tools`.
    pub tool_rate: Option<FileToolRate>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// A token bucket: sustained rate and burst.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRate {
    /// Sustained rate.
    pub per_second: Option<f64>,
    /// Burst size.
    pub burst: Option<u32>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// A token bucket per client and tool, for the tools matching `tools` globs.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileToolRate {
    /// Sustained rate.
    pub per_second: Option<f64>,
    /// Burst size.
    pub burst: Option<u32>,
    /// Globs on tool names this applies to.
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Per-route limits.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRouteLimits {
    /// Most requests in flight on this route.
    pub max_inflight: Option<usize>,
    /// Most open streams on this route.
    pub max_streams: Option<usize>,
    /// Deadline in milliseconds for a whole exchange with the backend (GET streams excepted).
    pub timeout_ms: Option<u64>,
    /// Time limits in milliseconds by tool-name glob.
    #[serde(default)]
    pub tool_timeouts: BTreeMap<String, u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// How a backend says it does not know a session.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileNotFound {
    /// HTTP status of the answer.
    pub status: Option<u16>,
    /// JSON-RPC error code of the answer.
    pub code: Option<i64>,
    /// Text the error message contains (case-insensitive).
    pub message_contains: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// One upstream pool.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FilePool {
    /// Backend addresses, ip:port.
    #[serde(default)]
    pub backends: Vec<String>,
    /// round-robin (default), least-requests or power-of-two-choices.
    #[schemars(extend("enum" = ["round-robin", "least-requests", "power-of-two-choices", "p2c", null]))]
    pub balance: Option<String>,
    /// Host header sent upstream. Default: the backend's ip:port.
    pub host: Option<String>,
    /// Connect timeout in milliseconds. Default 2000.
    pub connect_timeout_ms: Option<u64>,
    /// Read timeout in milliseconds. Default 300000.
    pub read_timeout_ms: Option<u64>,
    /// Other backends tried after a refused connection. Default 2.
    pub retries: Option<usize>,
    /// A refusing backend is skipped this long, in milliseconds. Default 2000.
    pub failure_cooldown_ms: Option<u64>,
    /// Idle upstream connections kept. Default 128.
    pub max_idle_connections: Option<usize>,
    /// How backends say "unknown session". Default: status 404, or status 400 with code -32000 and a message containing `session`.
    pub session_not_found: Option<Vec<FileNotFound>>,
    /// Seconds a draining backend keeps its sessions. Default 120.
    pub drain_timeout_s: Option<u64>,
    /// Members from a file or DNS besides `backends`.
    pub discovery: Option<FileDiscovery>,
    /// Active health checks. Off unless set.
    pub health: Option<FileHealth>,
    /// `tls`: TLS to this pool's backends.
    pub tls: Option<super::auth::FilePoolTls>,
    /// `identity-headers`: the caller's identity sent to this pool's backends.
    pub identity_headers: Option<super::auth::FileIdentityHeaders>,
    /// `upstream-auth`: the credentials this pool's backends get (secrets named by file or environment variable).
    pub upstream_auth: Option<super::upstream_auth::FileUpstreamAuth>,
    /// Which protocol era the backends serve: detect (default: probed with `server/discover`), legacy, modern or dual.
    #[schemars(extend("enum" = ["detect", "legacy", "modern", "dual", null]))]
    pub era: Option<String>,
    /// Where the backends keep their tasks: `own` (default: in each pod's memory, so a task's polls go to the pod that created it, and a task whose pod is gone is answered as lost) or `shared` (in a store every pod reads, so polls are balanced like any request).
    #[schemars(extend("enum" = ["own", "shared", null]))]
    pub tasks: Option<String>,
    /// `tool-pinning`: off (default), record or enforce, or a map {mode, allow-new-tools, pins-file, state-file, max-tools, max-definition-bytes} (docs/governance.md).
    pub tool_pinning: Option<super::tool_pinning::FileToolPinning>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Where a pool's members come from besides the static list.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileDiscovery {
    /// A file listing backend addresses, one a line, watched.
    pub file: Option<String>,
    /// A DNS name and port (name:port) whose addresses are the backends.
    pub dns: Option<String>,
    /// The DNS resolver address (ip:port). Default: the system resolver.
    pub resolver: Option<String>,
    /// How often to look again, in milliseconds. Default 5000.
    pub interval_ms: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// Active health checks.
#[derive(Debug, Deserialize, JsonSchema, Default, Clone)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileHealth {
    /// Path probed on each backend (`GET`); without one the probe is a TCP connect.
    pub path: Option<String>,
    /// Probe interval in milliseconds. Default 2000.
    pub interval_ms: Option<u64>,
    /// Probe timeout in milliseconds. Default 1000.
    pub timeout_ms: Option<u64>,
    /// Failed probes before a backend is down. Default 2.
    pub fall: Option<u32>,
    /// Passed probes before a backend is up again. Default 2.
    pub rise: Option<u32>,
    /// Active health checks; on by default.
    pub enabled: Option<bool>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// One route.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRoute {
    /// Exact request path (this or `path-prefix`).
    pub path: Option<String>,
    /// Request path prefix (this or `path`).
    pub path_prefix: Option<String>,
    /// stateless (default), stateful (gateway-owned sessions), auto (per request by era) or
    /// virtual (a virtual server: `members`, no `pool`).
    #[schemars(extend("enum" = ["stateless", "stateful", "auto", "virtual", null]))]
    pub mode: Option<String>,
    /// The pool requests go to unless a rule matches.
    pub pool: Option<String>,
    /// Path sent upstream. Default: the request path.
    pub upstream_path: Option<String>,
    /// Check Mcp-Method/Mcp-Name against the body. Default: the top-level `check-headers`.
    pub check_headers: Option<bool>,
    /// `off`: this route's cacheable results are never answered from the cache (`on`, the default, follows the top-level `cache.enabled`).
    pub cache: Option<String>,
    /// The interceptor chain of this route: names of `interceptors` servers, whose interceptors run on its requests and answers (SEP-2624). Default: none.
    #[serde(default)]
    pub interceptors: Vec<String>,
    /// Limits of this route.
    #[serde(default)]
    pub limits: FileRouteLimits,
    /// Routing rules, first match wins.
    #[serde(default)]
    pub rules: Vec<FileRule>,
    /// `auth`: `required` or `none`.
    #[schemars(extend("enum" = ["required", "none", null]))]
    pub auth: Option<String>,
    /// `authz`: who may call what on this route.
    #[serde(default)]
    pub authz: Vec<super::auth::FileAuthzRule>,
    /// Request capture of this route (JSON lines). Off unless set.
    pub capture: Option<super::capture::FileCapture>,
    /// Legacy clients on backends that serve both eras: `native` (default: sessions on the
    /// backend) or `bridge` (2026-07-28 requests balanced per request, as on modern backends).
    #[schemars(extend("enum" = ["native", "bridge", null]))]
    pub dual_backends: Option<String>,
    /// How routing rules on `Mcp-Name` and `authz` rules compare names and URIs: `exact`
    /// (default: code points) or `folded` (NFKC, then lowercase, on both sides).
    #[schemars(extend("enum" = ["exact", "folded", null]))]
    pub name_match: Option<String>,
    /// `mode: virtual`: the `serverInfo` the virtual server answers with.
    pub server_info: Option<super::virtual_server::FileServerInfo>,
    /// `mode: virtual`: what joins a member's name to its items' names in default prefixes.
    /// Default `__`.
    pub separator: Option<String>,
    /// `mode: virtual`: the virtual server's `instructions`. Default: the members' own,
    /// joined under headings.
    pub instructions: Option<String>,
    /// `mode: virtual`: the member servers, in priority order (an earlier member keeps a
    /// name two of them expose).
    #[serde(default)]
    pub members: Vec<super::virtual_server::FileMember>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// One routing rule: first match wins.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileRule {
    /// Globs on the MCP method and name.
    #[serde(rename = "match", default)]
    pub matches: FileMatch,
    /// The pool a matching request goes to.
    pub pool: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `admin-token`: the admin API's bearer token, read from a file or an environment variable.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileAdminToken {
    /// A file holding the token (at least 16 characters).
    pub file: Option<String>,
    /// An environment variable holding the token.
    pub env: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `client-timeouts`: request header, request body and idle keep-alive timeouts, in seconds.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileClientTimeouts {
    /// Longest time to receive a request head, in seconds. Default 60.
    pub header_s: Option<u64>,
    /// Longest silence while a request body arrives, in seconds. Default 60.
    pub body_s: Option<u64>,
    /// Longest idle time of a kept-alive connection between requests, in seconds. Default 75.
    pub idle_s: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}
