//! Internal session settings that the session and stream code read: the Redis store's
//! address (`sessions.redis`) and resumable streams (`sessions.resume`).

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

/// `sessions.redis.sentinel`: the primary the Sentinels name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelConfig {
    /// The name the Sentinels monitor the primary by.
    pub master_name: String,
    /// `redis://` URLs of the Sentinels.
    pub nodes: Vec<String>,
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
