//! Validation of the `routes` section: each route's path, mode, pool or rules, limits, cache
//! and virtual members, then what needs all of them (their `auth`, no two on one path).

use super::file::{FileMatch, FileRoute, FileRouteLimits, FileRule};
use super::internal::*;
use super::mode::Mode;
use super::problems::Problems;
use super::RouteAuth;
use std::collections::BTreeMap;
use std::time::Duration;

fn route_limits(p: &mut Problems, at: &str, l: &FileRouteLimits) -> RouteLimits {
    p.unknown(
        at,
        &l.unknown,
        "max-inflight, max-streams, timeout-ms, tool-timeouts",
    );
    let tool_timeouts = l
        .tool_timeouts
        .iter()
        .filter_map(|(glob, ms)| {
            let pattern = p.pattern(format!("{at}.tool-timeouts.{glob}"), glob)?;
            Some((pattern, Duration::from_millis(*ms)))
        })
        .collect();
    RouteLimits {
        max_inflight: l.max_inflight,
        max_streams: l.max_streams,
        timeout: l.timeout_ms.map(Duration::from_millis),
        tool_timeouts,
    }
}

pub(super) fn route_config(
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
        "path, path-prefix, mode, pool, upstream-path, check-headers, cache, limits, rules, auth, authz, \
         capture, dual-backends, name-match, server-info, separator, instructions, members, interceptors",
    );
    let path = route_path(p, &at, route);
    let is_virtual = route.mode.as_deref() == Some("virtual");
    let mode = route_mode(p, &at, route.mode.as_deref());
    let virtual_server = virtual_keys(p, &at, route, is_virtual, pools);
    let dual_backends = dual_backends(p, &at, route.dual_backends.as_deref());
    let name_match = name_match(p, &at, route.name_match.as_deref());
    let pool = route_pool(p, &at, route, virtual_server.as_ref(), pools);
    let rules = route
        .rules
        .iter()
        .enumerate()
        .map(|(j, rule)| rule_config(p, &format!("{at}.rules[{j}]"), rule, pools))
        .collect();
    RouteConfig {
        path,
        mode,
        pool,
        upstream_path: route.upstream_path.clone(),
        check_headers: route.check_headers.unwrap_or(check_headers),
        cache: route_cache(p, &at, route.cache.as_deref()),
        limits: route_limits(p, &format!("{at}.limits"), &route.limits),
        rules,
        auth: RouteAuth::None,
        authz: Vec::new(),
        capture: route
            .capture
            .as_ref()
            .and_then(|c| super::capture::capture_config(p, &at, c)),
        dual_backends,
        name_match,
        virtual_server,
        // `interceptors`: resolved once every server is validated (`validate.rs`)
        interceptors: Vec::new(),
    }
}

/// `cache`: `on` (the default) or `off`.
fn route_cache(p: &mut Problems, at: &str, cache: Option<&str>) -> bool {
    match cache {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            p.add(format!("{at}.cache"), format!("`{other}`: give on or off"));
            true
        }
    }
}

/// What a route matches (`path` exact, or `path-prefix`), and its paths (`upstream-path` too)
/// starting with `/`.
fn route_path(p: &mut Problems, at: &str, route: &FileRoute) -> PathMatch {
    let path = match (&route.path, &route.path_prefix) {
        (Some(path), None) => PathMatch::Exact(path.clone()),
        (None, Some(prefix)) => PathMatch::Prefix(prefix.clone()),
        (Some(_), Some(_)) => {
            p.add(at, "give either path or path-prefix, not both");
            PathMatch::Exact(String::new())
        }
        (None, None) => {
            p.add(at, "needs path (exact) or path-prefix");
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
    path
}

/// `mode`: stateless unless given (a virtual route is stateless too).
fn route_mode(p: &mut Problems, at: &str, mode: Option<&str>) -> Mode {
    match mode.unwrap_or("stateless") {
        "stateless" | "virtual" => Mode::Stateless,
        "stateful" => Mode::Stateful,
        "auto" => Mode::Auto,
        other => {
            p.add(
                format!("{at}.mode"),
                format!("unknown `{other}` (stateless, stateful, auto, virtual)"),
            );
            Mode::Stateless
        }
    }
}

/// `dual-backends`: native unless `bridge`.
fn dual_backends(p: &mut Problems, at: &str, dual: Option<&str>) -> DualBackends {
    match dual {
        None | Some("native") => DualBackends::Native,
        Some("bridge") => DualBackends::Bridge,
        Some(other) => {
            p.add(
                format!("{at}.dual-backends"),
                format!("unknown `{other}` (native, bridge)"),
            );
            DualBackends::Native
        }
    }
}

/// `name-match`: exact unless `folded`.
fn name_match(p: &mut Problems, at: &str, name_match: Option<&str>) -> NameMatch {
    match name_match {
        None | Some("exact") => NameMatch::Exact,
        Some("folded") => NameMatch::Folded,
        Some(other) => {
            p.add(
                format!("{at}.name-match"),
                format!("unknown `{other}` (exact, folded)"),
            );
            NameMatch::Exact
        }
    }
}

/// The route's pool: its `pool`, or on a virtual route (which takes neither `pool` nor
/// `rules`) its first member's.
fn route_pool(
    p: &mut Problems,
    at: &str,
    route: &FileRoute,
    virtual_server: Option<&super::VirtualServer>,
    pools: &BTreeMap<&str, usize>,
) -> usize {
    let Some(v) = virtual_server else {
        return pool_ref(p, format!("{at}.pool"), route.pool.as_deref(), pools);
    };
    if route.pool.is_some() {
        p.add(
            format!("{at}.pool"),
            "a virtual route has no pool of its own: each member names its pool",
        );
    }
    if !route.rules.is_empty() {
        p.add(
            format!("{at}.rules"),
            "a virtual route routes by name to its members: rules are not taken here",
        );
    }
    v.members.first().map_or(0, |m| m.pool)
}

/// One of a route's `rules` (at `rat`): what it matches, and the pool it sends to.
fn rule_config(
    p: &mut Problems,
    rat: &str,
    rule: &FileRule,
    pools: &BTreeMap<&str, usize>,
) -> RuleConfig {
    p.unknown(rat, &rule.unknown, "match, pool");
    let FileMatch {
        method,
        name,
        unknown,
    } = &rule.matches;
    p.unknown(&format!("{rat}.match"), unknown, "method, name");
    let method = method
        .as_ref()
        .and_then(|g| p.pattern(format!("{rat}.match.method"), g));
    let name = name
        .as_ref()
        .and_then(|g| p.pattern(format!("{rat}.match.name"), g));
    RuleConfig {
        method,
        name,
        pool: pool_ref(p, format!("{rat}.pool"), rule.pool.as_deref(), pools),
    }
}

/// A virtual route's keys, validated (`None` on other routes, which must not carry them).
fn virtual_keys(
    p: &mut Problems,
    at: &str,
    route: &FileRoute,
    is_virtual: bool,
    pools: &BTreeMap<&str, usize>,
) -> Option<super::VirtualServer> {
    if !is_virtual {
        let given = [
            ("server-info", route.server_info.is_some()),
            ("separator", route.separator.is_some()),
            ("instructions", route.instructions.is_some()),
            ("members", !route.members.is_empty()),
        ];
        for (key, _) in given.iter().filter(|(_, set)| *set) {
            p.add(
                format!("{at}.{key}"),
                "only a route with `mode: virtual` takes it",
            );
        }
        return None;
    }
    let keys = super::virtual_server::VirtualKeys {
        server_info: route.server_info.as_ref(),
        separator: route.separator.as_deref(),
        instructions: route.instructions.as_deref(),
        members: &route.members,
    };
    Some(super::virtual_server::virtual_server(p, at, keys, pools))
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

/// The routes' `auth` and `authz` (read once the `auth` section is), and no two routes on one
/// path.
pub(super) fn check_routes(
    p: &mut Problems,
    routes: &mut [RouteConfig],
    files: &[super::file::FileRoute],
    with_auth: bool,
) {
    for (i, (route, file_route)) in routes.iter_mut().zip(files).enumerate() {
        let at = format!("routes[{i}]");
        (route.auth, route.authz) = super::route_auth::route_auth(
            p,
            &at,
            (file_route.auth.as_deref(), &file_route.authz),
            with_auth,
        );
    }
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
}
