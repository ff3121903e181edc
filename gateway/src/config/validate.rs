//! Validation: a parsed [`FileConfig`](super::file::FileConfig) becomes a [`Config`], or the
//! list of every problem found, each with its key path (river panics on the first; we list all).

use super::file::{FileConfig, FileLimits, FilePool, FileRate};
use super::internal::*;
use super::problems::Problems;
use super::routes::{check_routes, route_config};
use super::sessions::{resume_config, store_config};
use super::Pattern;
use std::collections::BTreeMap;
use std::time::Duration;

impl Config {
    /// Validates a parsed file, returning every problem found.
    pub fn from_file(file: FileConfig) -> Result<Config, Vec<ConfigError>> {
        let mut p = Problems::default();
        p.unknown(
            "",
            &file.unknown,
            "listen, allowed-hosts, allowed-origins, admin, threads, max-body-bytes, check-headers, sessions, limits, metric-tools, pools, routes, auth, listen-tls, tracing, admin-token, client-timeouts, bridge, tasks, cache, audit, interceptors",
        );
        let listen = p.addr("listen", file.listen.as_deref().unwrap_or(DEFAULT_LISTEN));
        no_empty_guard_names(&mut p, &file);
        let admin = file.admin.as_deref().and_then(|a| p.addr("admin", a));
        let threads = file.threads.unwrap_or_else(default_threads);
        if threads == 0 {
            p.add("threads", "must be at least 1");
        }
        let max_body_bytes = file.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
        if max_body_bytes == 0 {
            p.add("max-body-bytes", "must be at least 1");
        }
        let check_headers = file.check_headers.unwrap_or(true);
        let sessions = session_config(&mut p, &file.sessions);
        let limits = limits_config(&mut p, &file.limits);

        let pool_index = pool_index(&file.pools);
        let pools = pools_config(&mut p, &file.pools, file.base_dir.as_deref());
        let mut routes: Vec<RouteConfig> = file
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| route_config(&mut p, i, r, &pool_index, check_headers))
            .collect();
        let auth = file
            .auth
            .as_ref()
            .and_then(|a| super::auth::auth_config(&mut p, a));
        let listen_tls = file
            .listen_tls
            .as_ref()
            .and_then(|t| super::auth::listen_tls(&mut p, t));
        check_routes(&mut p, &mut routes, &file.routes, auth.is_some());
        let interceptors = super::interceptors::validate(&mut p, &file.interceptors);
        for (i, (route, file_route)) in routes.iter_mut().zip(&file.routes).enumerate() {
            route.interceptors = super::interceptors::route_chain(
                &mut p,
                &format!("routes[{i}]"),
                &file_route.interceptors,
                &interceptors,
            );
        }
        let tracing = file
            .tracing
            .as_ref()
            .and_then(|t| super::tracing::tracing_config(&mut p, t));
        let audit = file
            .audit
            .as_ref()
            .and_then(|a| super::audit::audit_config(&mut p, a, tracing.as_ref()));
        let admin_token = super::hardening::admin_token(&mut p, &file.admin_token);
        let client_timeouts = super::hardening::client_timeouts(&mut p, &file.client_timeouts);
        let bridge = super::bridge::validate(&mut p, &file.bridge);
        let tasks = super::tasks::validate(&mut p, &file.tasks);
        let redis_sessions = matches!(sessions.store, super::StoreConfig::Redis(_));
        let cache = super::cache::validate(&mut p, &file.cache, redis_sessions);
        if cache.shared && file.bridge.request_state_key_file.is_none() {
            // the shared tier's entries carry a MAC of the sealer's key (cache/shared.rs)
            p.add(
                "cache.store",
                "`redis` needs bridge.request-state-key-file (the same key on every replica): the entries in Redis are signed with it, and a replica reads only what it can verify",
            );
        }
        let allowed_hosts =
            super::hardening::guard_list(listen, file.allowed_hosts, super::LOOPBACK_HOSTS);
        let allowed_origins =
            super::hardening::guard_list(listen, file.allowed_origins, super::LOOPBACK_ORIGINS);
        // `p.addr` noted a problem when `listen` is not an address
        match (p.0.is_empty(), listen) {
            (true, Some(listen)) => Ok(Config {
                listen,
                allowed_hosts,
                allowed_origins,
                admin,
                threads,
                max_body_bytes,
                sessions,
                limits,
                metric_tools: file.metric_tools,
                pools,
                routes,
                auth,
                listen_tls,
                tracing,
                admin_token,
                client_timeouts,
                bridge,
                tasks,
                cache,
                audit,
                interceptors,
            }),
            _ => Err(p.0),
        }
    }

    /// The pool with this name.
    pub fn pool_named(&self, name: &str) -> Option<&PoolConfig> {
        self.pools.iter().find(|p| p.name == name)
    }
}

/// No entry of `allowed-hosts` or `allowed-origins` is empty.
fn no_empty_guard_names(p: &mut Problems, file: &FileConfig) {
    for (key, globs) in [
        ("allowed-hosts", &file.allowed_hosts),
        ("allowed-origins", &file.allowed_origins),
    ] {
        for (i, g) in globs.iter().enumerate() {
            if g.trim().is_empty() {
                p.add(format!("{key}[{i}]"), "must not be empty");
            }
        }
    }
}

/// Each pool's index in the validated list, by name (the routes name their pools).
fn pool_index(pools: &BTreeMap<String, FilePool>) -> BTreeMap<&str, usize> {
    pools
        .keys()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i))
        .collect()
}

/// The `pools` section: every pool validated, in name order, and at least one.
fn pools_config(
    p: &mut Problems,
    pools: &BTreeMap<String, FilePool>,
    base: Option<&std::path::Path>,
) -> Vec<PoolConfig> {
    let pools: Vec<PoolConfig> = pools
        .iter()
        .map(|(name, pool)| super::pools::pool_config(p, name, pool, base))
        .collect();
    if pools.is_empty() {
        p.add("pools", "at least one pool is needed");
    }
    pools
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn rate(p: &mut Problems, at: &str, per_second: Option<f64>, burst: Option<u32>) -> Option<Rate> {
    match per_second {
        Some(r) if r > 0.0 && r.is_finite() => Some(Rate {
            per_second: r,
            burst: burst.unwrap_or_else(|| r.ceil().max(1.0) as u32).max(1),
        }),
        _ => {
            p.add(
                format!("{at}.per-second"),
                "a positive number of requests per second is required",
            );
            None
        }
    }
}

fn limits_config(p: &mut Problems, l: &FileLimits) -> Limits {
    p.unknown(
        "limits",
        &l.unknown,
        "client-id-header, max-inflight, max-streams, max-connections, max-connections-per-client, max-sessions-per-client, max-merged-list-bytes, rate, tool-rate",
    );
    let rate_of = |p: &mut Problems, at: &str, r: &FileRate| {
        p.unknown(at, &r.unknown, "per-second, burst");
        rate(p, at, r.per_second, r.burst)
    };
    let tool_rate = l.tool_rate.as_ref().and_then(|t| {
        p.unknown("limits.tool-rate", &t.unknown, "per-second, burst, tools");
        let tools: Vec<Pattern> = t
            .tools
            .iter()
            .enumerate()
            .filter_map(|(i, g)| p.pattern(format!("limits.tool-rate.tools[{i}]"), g))
            .collect();
        if t.tools.is_empty() {
            p.add(
                "limits.tool-rate.tools",
                "name the tools (globs) this rate applies to",
            );
        }
        rate(p, "limits.tool-rate", t.per_second, t.burst).map(|r| (r, tools))
    });
    if l.max_connections == Some(0) {
        p.add(
            "limits.max-connections",
            "0 would refuse every connection; leave it out for no limit",
        );
    }
    if l.max_connections_per_client == Some(0) {
        p.add(
            "limits.max-connections-per-client",
            "0 would refuse every connection; leave it out for the default share",
        );
    }
    if l.max_merged_list_bytes == Some(0) {
        p.add(
            "limits.max-merged-list-bytes",
            "0 would refuse every merged list; leave it out for the default (256 MiB)",
        );
    }
    if let Some(h) = &l.client_id_header {
        if http::HeaderName::from_bytes(h.as_bytes()).is_err() {
            p.add(
                "limits.client-id-header",
                format!("`{h}` is not a header name"),
            );
        }
    }
    Limits {
        client_id_header: l.client_id_header.as_ref().map(|h| h.to_ascii_lowercase()),
        max_inflight: l.max_inflight,
        max_streams: l.max_streams,
        max_connections: l.max_connections,
        max_connections_per_client: l.max_connections_per_client,
        max_sessions_per_client: l.max_sessions_per_client,
        max_merged_list_bytes: l
            .max_merged_list_bytes
            .unwrap_or(super::internal::DEFAULT_MAX_MERGED_LIST_BYTES),
        rate: l.rate.as_ref().and_then(|r| rate_of(p, "limits.rate", r)),
        tool_rate,
    }
}
/// The `sessions` section.
fn session_config(p: &mut Problems, sessions: &super::file::FileSessions) -> SessionConfig {
    p.unknown(
        "sessions",
        &sessions.unknown,
        "idle-timeout-s, max, hold-streams, store, redis, resume, background-moves-per-second, \
         max-per-principal, max-subscriptions, max-subscription-uri-bytes",
    );
    let resume = resume_config(p, &sessions.resume);
    let store = store_config(p, sessions);
    let defaults = SessionConfig::default();
    let config = SessionConfig {
        idle_timeout: sessions
            .idle_timeout_s
            .map_or(defaults.idle_timeout, Duration::from_secs),
        max: sessions.max.unwrap_or(defaults.max),
        // With every store: a shared store's stream lease lets one replica hold each
        // session's stream, and the others read it through Redis (`stream/owner.rs`).
        hold_streams: sessions.hold_streams.unwrap_or(defaults.hold_streams),
        store,
        resume,
        background_moves_per_second: sessions
            .background_moves_per_second
            .unwrap_or(defaults.background_moves_per_second),
        max_per_principal: (sessions.max_per_principal).unwrap_or(defaults.max_per_principal),
        max_subscriptions: (sessions.max_subscriptions).unwrap_or(defaults.max_subscriptions),
        max_subscription_uri_bytes: (sessions.max_subscription_uri_bytes)
            .unwrap_or(defaults.max_subscription_uri_bytes),
    };
    if config.idle_timeout.is_zero() {
        p.add("sessions.idle-timeout-s", "must be at least 1");
    }
    for (key, value) in [
        ("max-per-principal", config.max_per_principal),
        ("max-subscriptions", config.max_subscriptions),
        (
            "max-subscription-uri-bytes",
            config.max_subscription_uri_bytes,
        ),
    ] {
        if value == 0 {
            p.add(format!("sessions.{key}"), "must be at least 1");
        }
    }
    config
}
