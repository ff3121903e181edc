//! `bridge`: the era bridges' settings. `bridge.pooled-sessions` bounds the backend sessions
//! the gateway opens and keeps on legacy (session) backends for 2026-07-28 clients
//! (`crate::bridge::modern_clients`): file struct, typed settings with their defaults, validation.
//! The `bridge` section of the config, beside the others: it imports only `problems.rs`.

use super::problems::{Problems, Unknown};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// `bridge` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileBridge {
    /// Backend sessions kept on legacy backends for 2026-07-28 clients.
    #[serde(default)]
    pub pooled_sessions: FilePooledSessions,
    /// Seconds a call parked for a 2026-07-28 client's input (`input_required`) waits for its retry. Default 120.
    pub input_ttl_s: Option<u64>,
    /// A file holding the 256-bit root key (64 hex digits) of the gateway's one sealer: `requestState`s, virtual servers' cursors and session ids are each sealed with a key of their own derived from it. Default: a random key per process.
    pub request_state_key_file: Option<String>,
    /// The URL other replicas reach this one at (`http://HOST:PORT`; `${VAR}` is read from the environment, e.g. `http://${POD_IP}:8080`), sealed into the `requestState`s it issues: a retry reaching another replica is forwarded here. Needs `request-state-key-file`. Default none: a retry must reach the replica that parked its call.
    pub advertise_url: Option<String>,
    /// Cache hints on the cacheable bridged answers (lists, `resources/read`) whose server gave none.
    #[serde(default)]
    pub cache_hints: FileCacheHints,
    /// Bounds on the calls parked for a 2026-07-28 client's input (`input_required`).
    #[serde(default)]
    pub parked: FileParked,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `bridge.parked` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileParked {
    /// Most calls parked for a 2026-07-28 client's input at once, in all. Default 512.
    pub max: Option<usize>,
    /// Most parked calls of one principal (anonymous callers: of one peer address, IPv6 by /64). Default 8.
    pub max_per_principal: Option<usize>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `bridge.cache-hints` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileCacheHints {
    /// `cacheScope`: `private` or `public` (shared caches may keep the answer). Answers on a route with `auth` stay `private` whatever this says. Default private.
    pub scope: Option<CacheScope>,
    /// `ttlMs`: how long a client may reuse the answer. Default 0.
    pub ttl_ms: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// `bridge.cache-hints.scope`.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CacheScope {
    /// Only the client that asked may reuse it.
    #[default]
    Private,
    /// Any cache may reuse it.
    Public,
}

/// `bridge.pooled-sessions` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FilePooledSessions {
    /// Whether 2026-07-28 requests on a pool of only legacy backends are bridged (else -32005). Default true.
    pub enabled: Option<bool>,
    /// Most pooled backend sessions per backend. Default 64.
    pub max_per_backend: Option<usize>,
    /// Most pooled backend sessions in all. Default 1024.
    pub max: Option<usize>,
    /// Most pooled backend sessions one principal holds in all (anonymous callers: one peer address, IPv6 by /64); on one backend also at most half of `max-per-backend`. Default 16.
    pub max_per_principal: Option<usize>,
    /// Seconds a pooled backend session may stay unused before it is closed (DELETE upstream). Default 60.
    pub idle_s: Option<u64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// The era bridge's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeConfig {
    /// `bridge.pooled-sessions`.
    pub pooled: PooledSessions,
    /// How long a call parked for a 2026-07-28 client's input waits for the retry; then the
    /// backend's request is answered (an elicitation cancelled, others refused). Default 120 s.
    pub input_ttl: Duration,
    /// The root key of the one sealer (`request-state-key-file`), from which `requestState`s,
    /// virtual servers' cursors and session ids each derive a key of their own
    /// (`mcp_wire::seal`). Default: random per process (read at start; a reload does not
    /// change it).
    pub request_state_key: Option<[u8; 32]>,
    /// Where other replicas reach this one (`advertise-url`). Default none.
    pub advertise: Option<super::advertise::Advertise>,
    /// `cache-hints`: `ttlMs` (default 0) and whether `cacheScope` is `public` (default
    /// private) on cacheable bridged answers without hints of their own.
    pub cache_ttl_ms: u64,
    /// `cache-hints.scope: public`.
    pub cache_public: bool,
    /// `parked`: bounds on parked calls.
    pub parked: ParkedBounds,
}

/// Bounds on the calls parked for a 2026-07-28 client's input (`bridge.parked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParkedBounds {
    /// Most in all. Default 512.
    pub max: usize,
    /// Most of one principal (or anonymous peer address). Default 8.
    pub max_per_principal: usize,
}

impl Default for ParkedBounds {
    fn default() -> Self {
        ParkedBounds {
            max: 512,
            max_per_principal: 8,
        }
    }
}

impl Default for BridgeConfig {
    fn default() -> Self {
        BridgeConfig {
            pooled: PooledSessions::default(),
            input_ttl: Duration::from_secs(120),
            request_state_key: None,
            advertise: None,
            cache_ttl_ms: 0,
            cache_public: false,
            parked: ParkedBounds::default(),
        }
    }
}

/// 64 hex digits (surrounding whitespace ignored) as a 256-bit key.
fn hex_key(text: &str) -> Option<[u8; 32]> {
    let t = text.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// Bounds of the pooled backend sessions (2026-07-28 clients on legacy backends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PooledSessions {
    /// 2026-07-28 requests on a pool whose backends are all legacy are bridged; when false
    /// they get -32005 `no-backend-of-era`. Default true.
    pub enabled: bool,
    /// Most per backend. Default 64.
    pub max_per_backend: usize,
    /// Most in all. Default 1024.
    pub max: usize,
    /// Most of one principal (or anonymous peer address) in all. Default 16.
    pub max_per_principal: usize,
    /// Unused this long: closed with a DELETE upstream. Default 60 s.
    pub idle: Duration,
}

impl Default for PooledSessions {
    fn default() -> Self {
        PooledSessions {
            enabled: true,
            max_per_backend: 64,
            max: 1024,
            max_per_principal: 16,
            idle: Duration::from_secs(60),
        }
    }
}

impl PooledSessions {
    /// The share of one principal (or anonymous peer address) on one backend: at most
    /// `max-per-principal` and at most half of `max-per-backend` (at least 1), so no one
    /// principal holds a whole backend.
    pub fn share_per_backend(&self) -> usize {
        self.max_per_principal
            .min((self.max_per_backend / 2).max(1))
    }
}

/// Validates `bridge`.
pub(crate) fn validate(p: &mut Problems, file: &FileBridge) -> BridgeConfig {
    p.unknown(
        "bridge",
        &file.unknown,
        "pooled-sessions, input-ttl-s, request-state-key-file, advertise-url, cache-hints, parked",
    );
    let default_ttl = BridgeConfig::default().input_ttl.as_secs();
    let input_ttl = at_least_one(p, "input-ttl-s", file.input_ttl_s, default_ttl);
    let request_state_key = file
        .request_state_key_file
        .as_ref()
        .and_then(|path| request_state_key(p, path));
    let advertise = file
        .advertise_url
        .as_deref()
        .and_then(|url| super::advertise::advertise(p, url));
    if advertise.is_some() && file.request_state_key_file.is_none() {
        p.add(
            "bridge.advertise-url",
            "needs bridge.request-state-key-file (the same key on every replica): another replica cannot open the states this one seals",
        );
    }
    p.unknown(
        "bridge.cache-hints",
        &file.cache_hints.unknown,
        "scope, ttl-ms",
    );
    p.unknown(
        "bridge.pooled-sessions",
        &file.pooled_sessions.unknown,
        "enabled, max-per-backend, max, max-per-principal, idle-s",
    );
    p.unknown(
        "bridge.parked",
        &file.parked.unknown,
        "max, max-per-principal",
    );
    let parked = parked_bounds(p, &file.parked);
    BridgeConfig {
        parked,
        input_ttl: Duration::from_secs(input_ttl),
        request_state_key,
        advertise,
        cache_ttl_ms: file.cache_hints.ttl_ms.unwrap_or(0),
        cache_public: file.cache_hints.scope == Some(CacheScope::Public),
        pooled: pooled_sessions(p, &file.pooled_sessions),
    }
}

/// The key in `request-state-key-file` at `path`, or a problem when it cannot be read or is not
/// 64 hex digits.
fn request_state_key(p: &mut Problems, path: &str) -> Option<[u8; 32]> {
    let key = std::fs::read_to_string(path).ok().and_then(|t| hex_key(&t));
    if key.is_none() {
        p.add(
            "bridge.request-state-key-file",
            format!("{path}: not readable, or not 64 hex digits"),
        );
    }
    key
}

/// `bridge.parked`, each bound at least 1.
fn parked_bounds(p: &mut Problems, file: &FileParked) -> ParkedBounds {
    let d = ParkedBounds::default();
    ParkedBounds {
        max: at_least_one(p, "parked.max", file.max, d.max),
        max_per_principal: at_least_one(
            p,
            "parked.max-per-principal",
            file.max_per_principal,
            d.max_per_principal,
        ),
    }
}

/// `bridge.pooled-sessions`, each bound at least 1.
fn pooled_sessions(p: &mut Problems, f: &FilePooledSessions) -> PooledSessions {
    let d = PooledSessions::default();
    PooledSessions {
        enabled: f.enabled.unwrap_or(d.enabled),
        max_per_backend: at_least_one(
            p,
            "pooled-sessions.max-per-backend",
            f.max_per_backend,
            d.max_per_backend,
        ),
        max: at_least_one(p, "pooled-sessions.max", f.max, d.max),
        max_per_principal: at_least_one(
            p,
            "pooled-sessions.max-per-principal",
            f.max_per_principal,
            d.max_per_principal,
        ),
        idle: Duration::from_secs(at_least_one(
            p,
            "pooled-sessions.idle-s",
            f.idle_s,
            d.idle.as_secs(),
        )),
    }
}

/// `bridge.{key}`: `value`, or `default` when it is not given; 0 is a problem (and reads as the
/// default).
fn at_least_one<N>(p: &mut Problems, key: &str, value: Option<N>, default: N) -> N
where
    N: Copy + PartialEq + From<u8>,
{
    p.at_least_one(&format!("bridge.{key}"), value, default)
}
