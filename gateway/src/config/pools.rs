//! Validation of the `pools` section: backends, balancing, timeouts, discovery, health checks
//! and the answers that mean "session unknown", every problem listed with its key path.

use super::file::{FileNotFound, FilePool};
use super::internal::*;
use super::problems::Problems;
use std::time::Duration;

pub(super) fn pool_config(
    p: &mut Problems,
    name: &str,
    pool: &FilePool,
    base: Option<&std::path::Path>,
) -> PoolConfig {
    let at = format!("pools.{name}");
    p.unknown(
        &at,
        &pool.unknown,
        "backends, balance, host, connect-timeout-ms, read-timeout-ms, retries, \
         failure-cooldown-ms, max-idle-connections, session-not-found, drain-timeout-s, \
         discovery, health, tls, identity-headers, upstream-auth, era, tasks, tool-pinning",
    );
    if pool.backends.is_empty() && pool.discovery.is_none() {
        p.add(
            format!("{at}.backends"),
            "a pool needs backends or discovery",
        );
    }
    let backends = pool
        .backends
        .iter()
        .enumerate()
        .filter_map(|(i, b)| p.addr(&format!("{at}.backends[{i}]"), b))
        .collect();
    let balance = balance(p, &at, pool.balance.as_deref());
    let era = era(p, &at, pool.era.as_deref());
    if let Some(host) = &pool.host {
        if http::HeaderValue::from_str(host).is_err() {
            p.add(
                format!("{at}.host"),
                "not a valid Host header value (visible ASCII only)",
            );
        }
    }
    let ms = |v: Option<u64>, default: u64| Duration::from_millis(v.unwrap_or(default));
    PoolConfig {
        era,
        name: name.to_owned(),
        backends,
        balance,
        host: pool.host.clone(),
        connect_timeout: ms(pool.connect_timeout_ms, 2_000),
        read_timeout: ms(pool.read_timeout_ms, 300_000),
        retries: pool.retries.unwrap_or(2),
        failure_cooldown: ms(pool.failure_cooldown_ms, 2_000),
        max_idle_connections: pool.max_idle_connections.unwrap_or(128),
        session_not_found: match &pool.session_not_found {
            None => default_not_found(),
            Some(rules) => not_found_rules(p, &at, rules),
        },
        drain_timeout: Duration::from_secs(pool.drain_timeout_s.unwrap_or(120)),
        discovery: pool.discovery.as_ref().and_then(|d| discovery(p, &at, d)),
        tls: pool.tls.as_ref().map(|t| super::auth::pool_tls(p, &at, t)),
        identity_headers: pool
            .identity_headers
            .as_ref()
            .map(|h| super::auth::identity_headers(p, &at, h))
            .unwrap_or_default(),
        upstream_auth: pool
            .upstream_auth
            .as_ref()
            .map(|a| super::upstream_auth::validate(p, &at, a))
            .unwrap_or_default(),
        health: health(p, &at, pool.health.as_ref()),
        tasks_shared: tasks_shared(p, &at, pool.tasks.as_deref()),
        tool_pinning: super::tool_pinning::validate(
            p,
            (&at, name),
            pool.tool_pinning.as_ref(),
            base,
        ),
    }
}

/// `balance`: round-robin unless given.
fn balance(p: &mut Problems, at: &str, balance: Option<&str>) -> Balance {
    match balance.unwrap_or("round-robin") {
        "round-robin" => Balance::RoundRobin,
        "least-requests" => Balance::LeastRequests,
        "power-of-two-choices" | "p2c" => Balance::PowerOfTwoChoices,
        other => {
            p.add(
                format!("{at}.balance"),
                format!("unknown `{other}` (round-robin, least-requests, power-of-two-choices)"),
            );
            Balance::RoundRobin
        }
    }
}

/// `era`: detected unless fixed to one.
fn era(p: &mut Problems, at: &str, era: Option<&str>) -> EraSetting {
    match era {
        None | Some("detect") => EraSetting::Detect,
        Some(other) => match mcp_wire::BackendEra::parse(other) {
            Some(era) => EraSetting::Fixed(era),
            None => {
                p.add(
                    format!("{at}.era"),
                    format!("unknown `{other}` (detect, legacy, modern, dual)"),
                );
                EraSetting::Detect
            }
        },
    }
}

/// `tasks`: whether every backend of the pool reads every task (`shared`); `own` unless given.
fn tasks_shared(p: &mut Problems, at: &str, tasks: Option<&str>) -> bool {
    match tasks {
        None | Some("own") => false,
        Some("shared") => true,
        Some(other) => {
            p.add(
                format!("{at}.tasks"),
                format!("unknown `{other}` (own, shared)"),
            );
            false
        }
    }
}

fn discovery(p: &mut Problems, at: &str, d: &super::file::FileDiscovery) -> Option<Discovery> {
    let at = format!("{at}.discovery");
    p.unknown(&at, &d.unknown, "file, dns, resolver, interval-ms");
    let resolver = d
        .resolver
        .as_deref()
        .and_then(|r| p.addr(&format!("{at}.resolver"), r));
    let interval = Duration::from_millis(d.interval_ms.unwrap_or(5_000).max(100));
    match (&d.file, &d.dns) {
        (Some(file), None) => Some(Discovery::File {
            path: file.into(),
            interval,
        }),
        (None, Some(dns)) => match dns
            .rsplit_once(':')
            .map(|(n, port)| (n, port.parse::<u16>()))
        {
            Some((name, Ok(port))) if !name.is_empty() => Some(Discovery::Dns {
                name: name.to_owned(),
                port,
                interval,
                resolver,
            }),
            _ => {
                p.add(format!("{at}.dns"), format!("`{dns}` is not name:port"));
                None
            }
        },
        _ => {
            p.add(&at, "give exactly one of file or dns");
            None
        }
    }
}

fn not_found_rules(p: &mut Problems, at: &str, rules: &[FileNotFound]) -> Vec<NotFoundRule> {
    rules
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let rat = format!("{at}.session-not-found[{i}]");
            p.unknown(&rat, &r.unknown, "status, code, message-contains");
            match r.status {
                Some(status @ 100..=599) => Some(NotFoundRule {
                    status,
                    code: r.code,
                    message_contains: r.message_contains.as_ref().map(|m| m.to_lowercase()),
                }),
                _ => {
                    p.add(
                        format!("{rat}.status"),
                        "an HTTP status (100-599) is required",
                    );
                    None
                }
            }
        })
        .collect()
}

/// Health checks are on by default (a TCP connect); `enabled: false` turns them off.
fn health(p: &mut Problems, at: &str, h: Option<&super::file::FileHealth>) -> Option<HealthCheck> {
    let ms = |v: Option<u64>, default: u64| Duration::from_millis(v.unwrap_or(default));
    let default = super::file::FileHealth::default();
    let h = h.unwrap_or(&default);
    p.unknown(
        &format!("{at}.health"),
        &h.unknown,
        "enabled, path, interval-ms, timeout-ms, fall, rise",
    );
    if h.enabled == Some(false) {
        return None;
    }
    Some(HealthCheck {
        path: h.path.clone(),
        interval: ms(h.interval_ms, 2_000),
        timeout: ms(h.timeout_ms, 1_000),
        fall: h.fall.unwrap_or(2).max(1),
        rise: h.rise.unwrap_or(2).max(1),
    })
}
