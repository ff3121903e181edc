//! The validated, typed configuration the gateway runs on: the buffer between the stable file
//! format and internal details. [`Config::from_file`] checks everything and returns every
//! problem at once, each with its key path.

use super::file::{
    FileConfig, FileLimits, FileMatch, FileNotFound, FilePool, FileRate, FileRoute,
    FileRouteLimits, Unknown,
};
use std::collections::BTreeMap;
use std::fmt;
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
}

/// Gateway-owned sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// A session unused this long is removed (with a best-effort DELETE upstream). Default 30 min.
    pub idle_timeout: Duration,
    /// Most sessions held at once; further initializes get -32015. Default 100 000.
    pub max: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            idle_timeout: Duration::from_secs(1800),
            max: 100_000,
        }
    }
}

/// Gateway-wide admission limits; `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// Header whose value identifies a client (an API key); the client IP otherwise.
    pub client_id_header: Option<String>,
    /// Concurrent requests through the gateway.
    pub max_inflight: Option<usize>,
    /// Open server→client SSE streams (GET).
    pub max_streams: Option<usize>,
    /// Sessions held by one client identity.
    pub max_sessions_per_client: Option<usize>,
    /// Token bucket per client identity.
    pub rate: Option<Rate>,
    /// Token bucket per client identity and tool, for the tools matching the globs.
    pub tool_rate: Option<(Rate, Vec<String>)>,
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
    pub tool_timeouts: Vec<(String, Duration)>,
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
    /// Active health checks. Default: none (passive marking only).
    pub health: Option<HealthCheck>,
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

/// An active HTTP health probe: any answer below 500 counts as alive (session servers refuse
/// sessionless requests with 4xx, and that still means alive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// Path probed with GET. Default `/`.
    pub path: String,
    /// Between probes. Default 2 s.
    pub interval: Duration,
    /// Probe timeout. Default 1 s.
    pub timeout: Duration,
    /// Failed probes in a row that mark a backend down. Default 2.
    pub fall: u32,
    /// Good probes in a row that bring it back. Default 2.
    pub rise: u32,
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

/// How a route treats MCP sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2026-07-28 servers: per-request balancing, bodies untouched.
    Stateless,
    /// 2025-era servers: gateway-owned sessions pinned to a backend.
    Stateful,
    /// Chosen per request by protocol era.
    Auto,
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
    /// Admission limits and deadlines of this route.
    pub limits: RouteLimits,
    /// Rules, first match wins.
    pub rules: Vec<RuleConfig>,
}

/// A routing rule: globs on method and name, and the pool they send to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleConfig {
    /// Glob on the MCP method; `None` matches any.
    pub method: Option<String>,
    /// Glob on the MCP name (tool or prompt name, resource URI); `None` matches any.
    pub name: Option<String>,
    /// Index into [`Config::pools`].
    pub pool: usize,
}

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Key path, e.g. `routes[0].rules[1].pool`.
    pub path: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

#[derive(Default)]
struct Problems(Vec<ConfigError>);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigError {
            path: path.into(),
            message: message.into(),
        });
    }

    fn unknown(&mut self, path: &str, unknown: &Unknown, known: &str) {
        for key in unknown.keys() {
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            self.add(at, format!("unknown key (known keys: {known})"));
        }
    }

    fn addr(&mut self, path: &str, value: &str) -> Option<SocketAddr> {
        match value.parse() {
            Ok(addr) => Some(addr),
            Err(_) => {
                self.add(path, format!("`{value}` is not an IP:port address"));
                None
            }
        }
    }

    fn glob(&mut self, path: String, glob: &Option<String>) {
        if let Some(g) = glob {
            if let Err(e) = globset::Glob::new(g) {
                self.add(path, format!("bad glob `{g}`: {}", e.kind()));
            }
        }
    }
}

impl Config {
    /// Validates a parsed file, returning every problem found.
    pub fn from_file(file: FileConfig) -> Result<Config, Vec<ConfigError>> {
        let mut p = Problems::default();
        p.unknown(
            "",
            &file.unknown,
            "listen, admin, threads, max-body-bytes, check-headers, sessions, limits, metric-tools, pools, routes",
        );
        let listen = p.addr("listen", file.listen.as_deref().unwrap_or(DEFAULT_LISTEN));
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
        p.unknown("sessions", &file.sessions.unknown, "idle-timeout-s, max");
        let defaults = SessionConfig::default();
        let sessions = SessionConfig {
            idle_timeout: file
                .sessions
                .idle_timeout_s
                .map_or(defaults.idle_timeout, Duration::from_secs),
            max: file.sessions.max.unwrap_or(defaults.max),
        };
        if sessions.idle_timeout.is_zero() {
            p.add("sessions.idle-timeout-s", "must be at least 1");
        }
        let limits = limits_config(&mut p, &file.limits);

        let pool_index: BTreeMap<&str, usize> = file
            .pools
            .keys()
            .enumerate()
            .map(|(i, name)| (name.as_str(), i))
            .collect();
        let pools: Vec<PoolConfig> = file
            .pools
            .iter()
            .map(|(name, pool)| pool_config(&mut p, name, pool))
            .collect();
        if pools.is_empty() {
            p.add("pools", "at least one pool is needed");
        }
        let routes: Vec<RouteConfig> = file
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| route_config(&mut p, i, r, &pool_index, check_headers))
            .collect();
        if routes.is_empty() {
            p.add("routes", "at least one route is needed");
        }
        for (i, a) in routes.iter().enumerate() {
            if routes[..i].iter().any(|b| b.path == a.path) {
                p.add(
                    format!("routes[{i}]"),
                    "same path as an earlier route, which always wins",
                );
            }
        }
        if p.0.is_empty() {
            Ok(Config {
                listen: listen.expect("checked"),
                admin,
                threads,
                max_body_bytes,
                sessions,
                limits,
                metric_tools: file.metric_tools,
                pools,
                routes,
            })
        } else {
            Err(p.0)
        }
    }

    /// The pool with this name.
    pub fn pool_named(&self, name: &str) -> Option<&PoolConfig> {
        self.pools.iter().find(|p| p.name == name)
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn pool_config(p: &mut Problems, name: &str, pool: &FilePool) -> PoolConfig {
    let at = format!("pools.{name}");
    p.unknown(
        &at,
        &pool.unknown,
        "backends, balance, host, connect-timeout-ms, read-timeout-ms, retries, \
         failure-cooldown-ms, max-idle-connections, session-not-found, drain-timeout-s, \
         discovery, health",
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
    let balance = match pool.balance.as_deref().unwrap_or("round-robin") {
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
    };
    let ms = |v: Option<u64>, default: u64| Duration::from_millis(v.unwrap_or(default));
    PoolConfig {
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
        health: pool.health.as_ref().map(|h| {
            p.unknown(
                &format!("{at}.health"),
                &h.unknown,
                "path, interval-ms, timeout-ms, fall, rise",
            );
            HealthCheck {
                path: h.path.clone().unwrap_or_else(|| "/".into()),
                interval: ms(h.interval_ms, 2_000),
                timeout: ms(h.timeout_ms, 1_000),
                fall: h.fall.unwrap_or(2).max(1),
                rise: h.rise.unwrap_or(2).max(1),
            }
        }),
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
        "client-id-header, max-inflight, max-streams, max-sessions-per-client, rate, tool-rate",
    );
    let rate_of = |p: &mut Problems, at: &str, r: &FileRate| {
        p.unknown(at, &r.unknown, "per-second, burst");
        rate(p, at, r.per_second, r.burst)
    };
    let tool_rate = l.tool_rate.as_ref().and_then(|t| {
        p.unknown("limits.tool-rate", &t.unknown, "per-second, burst, tools");
        for (i, g) in t.tools.iter().enumerate() {
            p.glob(format!("limits.tool-rate.tools[{i}]"), &Some(g.clone()));
        }
        if t.tools.is_empty() {
            p.add(
                "limits.tool-rate.tools",
                "name the tools (globs) this rate applies to",
            );
        }
        rate(p, "limits.tool-rate", t.per_second, t.burst).map(|r| (r, t.tools.clone()))
    });
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
        max_sessions_per_client: l.max_sessions_per_client,
        rate: l.rate.as_ref().and_then(|r| rate_of(p, "limits.rate", r)),
        tool_rate,
    }
}

fn route_limits(p: &mut Problems, at: &str, l: &FileRouteLimits) -> RouteLimits {
    p.unknown(
        at,
        &l.unknown,
        "max-inflight, max-streams, timeout-ms, tool-timeouts",
    );
    let tool_timeouts = l
        .tool_timeouts
        .iter()
        .map(|(glob, ms)| {
            p.glob(format!("{at}.tool-timeouts.{glob}"), &Some(glob.clone()));
            (glob.clone(), Duration::from_millis(*ms))
        })
        .collect();
    RouteLimits {
        max_inflight: l.max_inflight,
        max_streams: l.max_streams,
        timeout: l.timeout_ms.map(Duration::from_millis),
        tool_timeouts,
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

fn route_config(
    p: &mut Problems,
    i: usize,
    route: &FileRoute,
    pools: &BTreeMap<&str, usize>,
    check_headers: bool,
) -> RouteConfig {
    let at = format!("routes[{i}]");
    p.unknown(
        &at,
        &route.unknown,
        "path, path-prefix, mode, pool, upstream-path, check-headers, limits, rules",
    );
    let path = match (&route.path, &route.path_prefix) {
        (Some(path), None) => PathMatch::Exact(path.clone()),
        (None, Some(prefix)) => PathMatch::Prefix(prefix.clone()),
        (Some(_), Some(_)) => {
            p.add(&at, "give either path or path-prefix, not both");
            PathMatch::Exact(String::new())
        }
        (None, None) => {
            p.add(&at, "needs path (exact) or path-prefix");
            PathMatch::Exact(String::new())
        }
    };
    let (PathMatch::Exact(s) | PathMatch::Prefix(s)) = &path;
    if !s.is_empty() && !s.starts_with('/') {
        p.add(format!("{at}.path"), format!("`{s}` must start with /"));
    }
    if let Some(up) = &route.upstream_path {
        if !up.starts_with('/') {
            p.add(
                format!("{at}.upstream-path"),
                format!("`{up}` must start with /"),
            );
        }
    }
    let mode = match route.mode.as_deref().unwrap_or("stateless") {
        "stateless" => Mode::Stateless,
        "stateful" => Mode::Stateful,
        "auto" => Mode::Auto,
        other => {
            p.add(
                format!("{at}.mode"),
                format!("unknown `{other}` (stateless, stateful, auto)"),
            );
            Mode::Stateless
        }
    };
    let pool = pool_ref(p, format!("{at}.pool"), route.pool.as_deref(), pools);
    let rules = route
        .rules
        .iter()
        .enumerate()
        .map(|(j, rule)| {
            let rat = format!("{at}.rules[{j}]");
            p.unknown(&rat, &rule.unknown, "match, pool");
            let FileMatch {
                method,
                name,
                unknown,
            } = &rule.matches;
            p.unknown(&format!("{rat}.match"), unknown, "method, name");
            p.glob(format!("{rat}.match.method"), method);
            p.glob(format!("{rat}.match.name"), name);
            RuleConfig {
                method: method.clone(),
                name: name.clone(),
                pool: pool_ref(p, format!("{rat}.pool"), rule.pool.as_deref(), pools),
            }
        })
        .collect();
    RouteConfig {
        path,
        mode,
        pool,
        upstream_path: route.upstream_path.clone(),
        check_headers: route.check_headers.unwrap_or(check_headers),
        limits: route_limits(p, &format!("{at}.limits"), &route.limits),
        rules,
    }
}

fn pool_ref(
    p: &mut Problems,
    at: String,
    name: Option<&str>,
    pools: &BTreeMap<&str, usize>,
) -> usize {
    match name {
        None => {
            p.add(at, "missing: name a pool");
            0
        }
        Some(name) => match pools.get(name) {
            Some(&i) => i,
            None => {
                let known: Vec<&str> = pools.keys().copied().collect();
                p.add(
                    at,
                    format!("no pool named `{name}` (pools: {})", known.join(", ")),
                );
                0
            }
        },
    }
}
