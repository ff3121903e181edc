//! Internal session settings that the session and stream code read: the Redis store's
//! address (`sessions.redis`) and resumable streams (`sessions.resume`), and their validation.

use super::problems::Problems;
use super::sentinel::SentinelConfig;
use std::time::Duration;

/// `sessions.redis`: where the Redis store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://` URLs: one for a single server, the seed nodes of a cluster.
    pub urls: Vec<String>,
    /// Redis Cluster.
    pub cluster: bool,
    /// Redis Sentinel (then `urls` is empty).
    pub sentinel: Option<SentinelConfig>,
    /// Prefix of every key.
    pub key_prefix: String,
}

/// Where sessions live.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StoreConfig {
    /// This process's memory (one replica; a restart loses every session).
    #[default]
    Memory,
    /// Redis, shared by every replica (`sessions.redis`).
    Redis(RedisConfig),
}

/// `sessions.resume`: resumable streams.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumeConfig {
    /// Gateway-owned event ids, buffering and `Last-Event-ID` replay. Default true.
    pub enabled: bool,
    /// Events kept per stream (the oldest go first). Default 1000.
    pub max_events: usize,
    /// Bytes kept per stream. Default 1 MiB.
    pub max_bytes: usize,
    /// Bytes kept across every stream of the process. Past it, the buffers of streams nobody
    /// reads are dropped, the one unread longest first (`stream/budget.rs`). Default 64 MiB.
    pub max_buffered_bytes: usize,
    /// How long a stream stays replayable after it ended, and how long the gateway keeps
    /// reading an answer nobody is reading (the client went away) before it gives up and
    /// cancels it upstream. Default 60 s.
    pub window: Duration,
    /// The `retry:` advice in priming events (how long a client waits before it reconnects).
    /// Default 1 s.
    pub retry: Duration,
    /// A comment line is sent on a client stream idle this long, so intermediaries do not cut
    /// it. Default 15 s.
    pub keep_alive: Duration,
    /// Close a client's POST answer stream after this long (SSE polling, SEP-1699): the client
    /// reconnects with `Last-Event-ID` after `retry` and gets the rest. Only for sessions that
    /// were sent a priming event (2025-11-25 or later). Default off.
    pub poll_after: Option<Duration>,
}

impl Default for ResumeConfig {
    fn default() -> Self {
        ResumeConfig {
            enabled: true,
            max_events: 1000,
            max_bytes: 1 << 20,
            max_buffered_bytes: 64 << 20,
            window: Duration::from_secs(60),
            retry: Duration::from_secs(1),
            keep_alive: Duration::from_secs(15),
            poll_after: None,
        }
    }
}

// Validation of `sessions.resume`, `sessions.store` and `sessions.redis` (from validate.rs).

/// `sessions.resume`.
pub(super) fn resume_config(p: &mut Problems, f: &super::file::FileResume) -> ResumeConfig {
    p.unknown(
        "sessions.resume",
        &f.unknown,
        "enabled, max-events, max-bytes, max-buffered-bytes, window-s, retry-ms, keep-alive-s, poll-after-ms",
    );
    let d = ResumeConfig::default();
    let c = ResumeConfig {
        enabled: f.enabled.unwrap_or(d.enabled),
        max_events: f.max_events.unwrap_or(d.max_events),
        max_bytes: f.max_bytes.unwrap_or(d.max_bytes),
        max_buffered_bytes: f.max_buffered_bytes.unwrap_or(d.max_buffered_bytes),
        window: f.window_s.map_or(d.window, Duration::from_secs),
        retry: f.retry_ms.map_or(d.retry, Duration::from_millis),
        keep_alive: f.keep_alive_s.map_or(d.keep_alive, Duration::from_secs),
        poll_after: f.poll_after_ms.map(Duration::from_millis).or(d.poll_after),
    };
    for (key, zero) in [
        ("max-events", c.max_events == 0),
        ("max-bytes", c.max_bytes == 0),
        ("window-s", c.window.is_zero()),
        ("keep-alive-s", c.keep_alive.is_zero()),
        ("poll-after-ms", c.poll_after.is_some_and(|d| d.is_zero())),
    ] {
        if zero {
            p.add(format!("sessions.resume.{key}"), "must be at least 1");
        }
    }
    if c.max_buffered_bytes < c.max_bytes {
        p.add(
            "sessions.resume.max-buffered-bytes",
            format!("must be at least max-bytes ({})", c.max_bytes),
        );
    }
    c
}

/// `sessions.store` and `sessions.redis`.
pub(super) fn store_config(p: &mut Problems, file: &super::file::FileSessions) -> StoreConfig {
    if let Some(redis) = &file.redis {
        p.unknown(
            "sessions.redis",
            &redis.unknown,
            "urls, cluster, sentinel, key-prefix",
        );
    }
    match file.store.as_deref() {
        None | Some("memory") => StoreConfig::Memory,
        Some("redis") => {
            let redis = file.redis.as_ref();
            let urls = redis.map(|r| r.urls.clone()).unwrap_or_default();
            let cluster = redis.and_then(|r| r.cluster).unwrap_or(false);
            let sentinel = redis
                .and_then(|r| r.sentinel.as_ref())
                .map(|s| super::sentinel::sentinel_config(p, s, &urls, cluster));
            if urls.is_empty() && sentinel.is_none() {
                p.add(
                    "sessions.redis.urls",
                    "give at least one redis:// URL (or sessions.redis.sentinel)",
                );
            }
            for (i, url) in urls.iter().enumerate() {
                if !url.starts_with("redis://") && !url.starts_with("rediss://") {
                    p.add(
                        format!("sessions.redis.urls[{i}]"),
                        "must be a redis:// URL",
                    );
                }
            }
            let key_prefix = redis
                .and_then(|r| r.key_prefix.clone())
                .unwrap_or_else(|| "mcpgw:".to_owned());
            if key_prefix.is_empty() {
                p.add("sessions.redis.key-prefix", "must not be empty");
            }
            StoreConfig::Redis(RedisConfig {
                urls,
                cluster,
                sentinel,
                key_prefix,
            })
        }
        Some(other) => {
            p.add("sessions.store", format!("`{other}`: use memory or redis"));
            StoreConfig::Memory
        }
    }
}
