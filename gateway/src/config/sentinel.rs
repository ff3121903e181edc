//! `sessions.redis.sentinel`: the Redis store through Redis Sentinel, validated into
//! [`SentinelConfig`] (every problem listed).

use super::file::FileSentinel;
use super::problems::Problems;

/// `sessions.redis.sentinel`: the primary the Sentinels name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelConfig {
    /// The name the Sentinels monitor the primary by.
    pub master_name: String,
    /// `redis://` URLs of the Sentinels.
    pub nodes: Vec<String>,
}

/// Checks the Sentinel section: a master name, at least one `redis://` Sentinel URL, and
/// neither `urls` nor `cluster` beside it.
pub(super) fn sentinel_config(
    p: &mut Problems,
    file: &FileSentinel,
    urls: &[String],
    cluster: bool,
) -> SentinelConfig {
    const AT: &str = "sessions.redis.sentinel";
    p.unknown(AT, &file.unknown, "master-name, nodes");
    let master_name = file.master_name.clone().unwrap_or_default();
    if master_name.is_empty() {
        p.add(
            format!("{AT}.master-name"),
            "give the name the Sentinels monitor the primary by",
        );
    }
    if file.nodes.is_empty() {
        p.add(
            format!("{AT}.nodes"),
            "give at least one redis:// URL of a Sentinel",
        );
    }
    for (i, url) in file.nodes.iter().enumerate() {
        if !url.starts_with("redis://") {
            p.add(format!("{AT}.nodes[{i}]"), "must be a redis:// URL");
        }
    }
    if !urls.is_empty() {
        p.add(
            "sessions.redis.urls",
            "not with sessions.redis.sentinel: the Sentinels name the primary",
        );
    }
    if cluster {
        p.add(
            "sessions.redis.cluster",
            "not with sessions.redis.sentinel: a cluster fails over by itself",
        );
    }
    SentinelConfig {
        master_name,
        nodes: file.nodes.clone(),
    }
}

#[cfg(test)]
#[path = "sentinel_tests.rs"]
mod tests;
