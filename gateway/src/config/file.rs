//! The config file as users write it: serde structs with kebab-case keys.
//! Nothing here is trusted; `internal.rs` validates it into the typed [`Config`](super::Config).
//! Addresses stay strings and unknown keys are captured rather than rejected by serde, so that
//! validation can list every problem at once, each with its key path.

use serde::de::IgnoredAny;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Unknown keys of one mapping, reported by validation.
pub type Unknown = BTreeMap<String, IgnoredAny>;

/// Top level of the config file. Defaults are documented on the internal [`super::Config`].
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileConfig {
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
    /// `admin-token`: where the admin API's bearer token comes from.
    pub admin_token: Option<FileAdminToken>,
    /// `client-timeouts`: how long a client may take to send a request, or idle between them.
    #[serde(default)]
    pub client_timeouts: FileClientTimeouts,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// Gateway-owned sessions of stateful routes.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileSessions {
    pub idle_timeout_s: Option<u64>,
    pub max: Option<usize>,
    pub hold_streams: Option<bool>,
    pub store: Option<String>,
    pub redis: Option<FileRedis>,
    #[serde(default)]
    pub resume: FileResume,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// `sessions.resume`: resumable streams.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileResume {
    pub enabled: Option<bool>,
    pub max_events: Option<usize>,
    pub max_bytes: Option<usize>,
    pub window_s: Option<u64>,
    pub retry_ms: Option<u64>,
    pub keep_alive_s: Option<u64>,
    pub poll_after_ms: Option<u64>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// `sessions.redis`: the shared store.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileRedis {
    #[serde(default)]
    pub urls: Vec<String>,
    pub cluster: Option<bool>,
    pub key_prefix: Option<String>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// Gateway-wide admission limits.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileLimits {
    pub client_id_header: Option<String>,
    pub max_inflight: Option<usize>,
    pub max_streams: Option<usize>,
    pub max_sessions_per_client: Option<usize>,
    pub rate: Option<FileRate>,
    pub tool_rate: Option<FileToolRate>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// A token bucket: sustained rate and burst.
#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct FileRate {
    pub per_second: Option<f64>,
    pub burst: Option<u32>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// A token bucket per client and tool, for the tools matching `tools` globs.
#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct FileToolRate {
    pub per_second: Option<f64>,
    pub burst: Option<u32>,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// Per-route limits.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileRouteLimits {
    pub max_inflight: Option<usize>,
    pub max_streams: Option<usize>,
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub tool_timeouts: BTreeMap<String, u64>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// How a backend says it does not know a session.
#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct FileNotFound {
    pub status: Option<u16>,
    pub code: Option<i64>,
    pub message_contains: Option<String>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One upstream pool.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FilePool {
    #[serde(default)]
    pub backends: Vec<String>,
    pub balance: Option<String>,
    pub host: Option<String>,
    pub connect_timeout_ms: Option<u64>,
    pub read_timeout_ms: Option<u64>,
    pub retries: Option<usize>,
    pub failure_cooldown_ms: Option<u64>,
    pub max_idle_connections: Option<usize>,
    pub session_not_found: Option<Vec<FileNotFound>>,
    pub drain_timeout_s: Option<u64>,
    pub discovery: Option<FileDiscovery>,
    pub health: Option<FileHealth>,
    /// `tls`: TLS to this pool's backends.
    pub tls: Option<super::auth::FilePoolTls>,
    /// `identity-headers`: the caller's identity sent to this pool's backends.
    pub identity_headers: Option<super::auth::FileIdentityHeaders>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// Where a pool's members come from besides the static list.
#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct FileDiscovery {
    pub file: Option<String>,
    pub dns: Option<String>,
    pub resolver: Option<String>,
    pub interval_ms: Option<u64>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// Active health checks.
#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct FileHealth {
    pub path: Option<String>,
    pub interval_ms: Option<u64>,
    pub timeout_ms: Option<u64>,
    pub fall: Option<u32>,
    pub rise: Option<u32>,
    pub enabled: Option<bool>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One route.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileRoute {
    pub path: Option<String>,
    pub path_prefix: Option<String>,
    pub mode: Option<String>,
    pub pool: Option<String>,
    pub upstream_path: Option<String>,
    pub check_headers: Option<bool>,
    #[serde(default)]
    pub limits: FileRouteLimits,
    #[serde(default)]
    pub rules: Vec<FileRule>,
    /// `auth`: `required` or `none`.
    pub auth: Option<String>,
    /// `authz`: who may call what on this route.
    #[serde(default)]
    pub authz: Vec<super::auth::FileAuthzRule>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// One routing rule: first match wins.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileRule {
    #[serde(rename = "match", default)]
    pub matches: FileMatch,
    pub pool: Option<String>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// Globs on the request's MCP method and name; an absent key matches anything.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileMatch {
    pub method: Option<String>,
    pub name: Option<String>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// `admin-token`: the admin API's bearer token, read from a file or an environment variable.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileAdminToken {
    pub file: Option<String>,
    pub env: Option<String>,
    #[serde(flatten)]
    pub unknown: Unknown,
}

/// `client-timeouts`: request header, request body and idle keep-alive timeouts, in seconds.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub struct FileClientTimeouts {
    pub header_s: Option<u64>,
    pub body_s: Option<u64>,
    pub idle_s: Option<u64>,
    #[serde(flatten)]
    pub unknown: Unknown,
}
