//! `cache`: the response cache of cacheable 2026-07-28 results (`ttlMs`/`cacheScope`). File
//! struct, typed settings with their defaults, validation. A leaf of `crate::config` (which
//! imports it): it imports only `config/problems.rs`.

use super::problems::{Problems, Unknown};
use schemars::JsonSchema;
use serde::Deserialize;

/// `cache` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileCache {
    /// Whether the gateway answers cacheable 2026-07-28 requests (`server/discover`, the lists, `resources/read`) from results it kept, for as long as their `ttlMs` says and only to whom their `cacheScope` allows. A route turns it off with `cache: off`. Default true.
    pub enabled: Option<bool>,
    /// The bytes of results kept in all; past it, the least recently used are dropped. Default 67108864 (64 MiB).
    pub max_bytes: Option<usize>,
    /// The bytes one authorization context's `private` results may hold (a share: its own least recently used are dropped to make room, never another caller's). Default 4194304 (4 MiB).
    pub max_bytes_per_context: Option<usize>,
    /// The bytes all authorization contexts' `private` results may hold together, so that the public part and new contexts are never starved: a context past it makes room from the least recently used private results of any context. At least `max-bytes-per-context`, at most `max-bytes`. Default a quarter of `max-bytes` (16 MiB), or `max-bytes-per-context` when larger.
    pub max_private_bytes: Option<usize>,
    /// The largest result kept; a larger answer is relayed as it comes. Default 1048576 (1 MiB).
    pub max_entry_bytes: Option<usize>,
    /// The longest a result is kept, in milliseconds: a larger `ttlMs` is lowered to it, and the client is served the lowered one. Default 3600000 (an hour).
    pub max_ttl_ms: Option<u64>,
    /// Request headers the backends' answers vary on (a server that selects its toolset by a header): their values are part of every key, so callers that send other values never share a result. Default none.
    pub vary_headers: Option<Vec<String>>,
    /// On a route without `auth`, the request headers that tell the backend's users apart (`authorization`, `x-api-key`, `cookie`, a front proxy's identity header): their values make a caller's authorization context. Without them such a route keeps no `private` result (the gateway cannot tell whose it is). A route with `auth` uses the credential its auth step took. Default none.
    pub context_headers: Option<Vec<String>>,
    /// Where `public` results are kept besides this replica's memory: `memory` (this replica only) or `redis` (the Redis of `sessions.store: redis`, shared by every replica, each result under a hashed key that Redis expires with its `ttlMs`, so a fleet of replicas asks a backend once per ttl). `private` results stay in each replica's memory, where a context's share holds. Default memory.
    pub store: Option<String>,
    /// With `store: redis`: the bytes of results this replica keeps in Redis at once (what it wrote that Redis has not expired yet); past it, a result is kept in memory only (`mcpgw_cache_total{result="shared-full"}`), so made-up requests cannot fill the Redis the sessions live in. The fleet's whole is at most replicas times this. Default 16777216 (16 MiB).
    pub shared_max_bytes: Option<usize>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// The response cache's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    /// `enabled`. Default true.
    pub enabled: bool,
    /// `max-bytes`. Default 64 MiB.
    pub max_bytes: usize,
    /// `max-bytes-per-context`. Default 4 MiB.
    pub max_bytes_per_context: usize,
    /// `max-private-bytes`. Default a quarter of `max-bytes` (at least `max-bytes-per-context`).
    pub max_private_bytes: usize,
    /// `max-entry-bytes`. Default 1 MiB.
    pub max_entry_bytes: usize,
    /// `max-ttl-ms`. Default an hour.
    pub max_ttl_ms: u64,
    /// `store: redis`: public results shared through the sessions' Redis.
    pub shared: bool,
    /// `vary-headers`, lower case. Default none.
    pub vary_headers: Vec<http::HeaderName>,
    /// `context-headers`, lower case. Default none.
    pub context_headers: Vec<http::HeaderName>,
    /// `shared-max-bytes`. Default 16 MiB.
    pub shared_max_bytes: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            max_bytes: 64 << 20,
            max_bytes_per_context: 4 << 20,
            max_private_bytes: 16 << 20,
            max_entry_bytes: 1 << 20,
            max_ttl_ms: 3_600_000,
            shared: false,
            vary_headers: Vec::new(),
            context_headers: Vec::new(),
            shared_max_bytes: 16 << 20,
        }
    }
}

/// Validates `cache`: every bound at least 1; an entry no larger than a context's share, a
/// share no larger than the whole; `store: redis` only beside `sessions.store: redis` (whose
/// Redis it shares: `redis_sessions`).
pub(crate) fn validate(p: &mut Problems, file: &FileCache, redis_sessions: bool) -> CacheConfig {
    p.unknown(
        "cache",
        &file.unknown,
        "enabled, max-bytes, max-bytes-per-context, max-private-bytes, max-entry-bytes, max-ttl-ms, store, vary-headers, context-headers, shared-max-bytes",
    );
    let shared = match file.store.as_deref() {
        None | Some("memory") => false,
        Some("redis") if redis_sessions => true,
        Some("redis") => {
            p.add(
                "cache.store",
                "`redis` shares the Redis of the sessions: set sessions.store: redis (and sessions.redis) too, or use memory",
            );
            false
        }
        Some(other) => {
            p.add("cache.store", format!("`{other}`: use memory or redis"));
            false
        }
    };
    let d = CacheConfig::default();
    let mut at_least_one = |key: &str, v: Option<usize>, default: usize| {
        p.at_least_one(&format!("cache.{key}"), v, default)
    };
    let max_bytes = at_least_one("max-bytes", file.max_bytes, d.max_bytes);
    let share = file.max_bytes_per_context;
    let max_bytes_per_context = at_least_one(
        "max-bytes-per-context",
        share,
        d.max_bytes_per_context.min(max_bytes),
    );
    let entry = file.max_entry_bytes;
    let max_entry_bytes = at_least_one(
        "max-entry-bytes",
        entry,
        d.max_entry_bytes.min(max_bytes_per_context),
    );
    let private = file.max_private_bytes;
    let default_private = (max_bytes / 4).max(max_bytes_per_context).min(max_bytes);
    let max_private_bytes = at_least_one("max-private-bytes", private, default_private);
    let shared_max = file.shared_max_bytes;
    let shared_max_bytes = at_least_one("shared-max-bytes", shared_max, d.shared_max_bytes);
    let max_ttl_ms = p.at_least_one("cache.max-ttl-ms", file.max_ttl_ms, d.max_ttl_ms);
    if max_private_bytes > max_bytes {
        p.add(
            "cache.max-private-bytes",
            "must be at most max-bytes (the private part of the whole)",
        );
    }
    if max_bytes_per_context > max_private_bytes {
        p.add(
            "cache.max-bytes-per-context",
            "must be at most max-private-bytes (one context's share of the private part)",
        );
    }
    if max_bytes_per_context > max_bytes {
        p.add(
            "cache.max-bytes-per-context",
            "must be at most max-bytes (one context's share of the whole)",
        );
    }
    if max_entry_bytes > max_bytes_per_context {
        p.add(
            "cache.max-entry-bytes",
            "must be at most max-bytes-per-context (an entry must fit in a context's share)",
        );
    }
    CacheConfig {
        enabled: file.enabled.unwrap_or(true),
        max_bytes,
        max_bytes_per_context,
        max_private_bytes,
        max_entry_bytes,
        max_ttl_ms,
        shared,
        vary_headers: header_names(p, "cache.vary-headers", &file.vary_headers),
        context_headers: header_names(p, "cache.context-headers", &file.context_headers),
        shared_max_bytes,
    }
}

/// The header names of a list (lower case), each bad one named.
fn header_names(
    p: &mut Problems,
    path: &str,
    names: &Option<Vec<String>>,
) -> Vec<http::HeaderName> {
    let mut out: Vec<http::HeaderName> = Vec::new();
    for (i, name) in names.iter().flatten().enumerate() {
        match http::HeaderName::from_bytes(name.as_bytes()) {
            Ok(h) if !out.contains(&h) => out.push(h),
            Ok(_) => p.add(format!("{path}[{i}]"), format!("`{name}` is listed twice")),
            Err(_) => p.add(
                format!("{path}[{i}]"),
                format!("`{name}` is no header name"),
            ),
        }
    }
    out
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
