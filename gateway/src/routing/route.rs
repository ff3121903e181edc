//! A compiled route (its path, mode, pool rules, deadlines, guard) and, for a virtual route,
//! the members it holds: each member is itself a plain route, so the two types sit together.

use super::name_maps::NameMaps;
use super::rules::{Rule, Rules};
use crate::auth::resource_uri;
use crate::config::Pattern;
use crate::config::{Mode, PathMatch, RouteConfig, VirtualServer};
use crate::federation::cursor::CursorSealer;
use std::borrow::Cow;
use std::sync::Arc;

/// A compiled route.
#[derive(Debug)]
pub struct Route {
    /// Position in the config, for logs.
    pub index: usize,
    /// Label for metrics: the configured path or prefix.
    pub label: String,
    path: PathMatch,
    /// Session handling.
    pub mode: Mode,
    /// Pool when no rule matches.
    pub default_pool: usize,
    upstream_path: Option<String>,
    /// A digest of the config that shapes its answers ([`fingerprint`]): the response cache
    /// keys results by it, so a reload that changes how answers are made is a new key, on
    /// every replica.
    pub fingerprint: u64,
    /// Whether header/body disagreement is answered with -32020.
    pub check_headers: bool,
    /// Whether its cacheable results may be answered from the cache (`cache`, with the
    /// top-level `cache.enabled`).
    pub cache: bool,
    rules: Rules,
    timeout: Option<std::time::Duration>,
    tool_timeouts: Vec<(Pattern, std::time::Duration)>,
    /// Whether a caller is required, and the authorization rules.
    pub guard: crate::auth::RouteGuard,
    /// Legacy clients on dual-era backends: native sessions or the bridge.
    pub dual_backends: crate::config::DualBackends,
    /// Its children of the per-request metric families, resolved on first use.
    pub metrics: crate::metrics::RouteMetrics,
    /// `mode: virtual`: its members.
    pub members: Option<Members>,
    /// A virtual route's member: its requests are the gateway's own, for a caller admitted,
    /// authorized and charged its per-tool rate on the virtual route.
    pub member: bool,
    /// Its interceptor chain (`interceptors`): empty for none.
    pub chain: crate::interceptors::Chain,
}

impl Route {
    /// Every pool a request on the route may go to: its default, then its rules' pools.
    pub fn pools(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(self.default_pool).chain(self.rules.pools())
    }

    pub(super) fn compile(index: usize, rc: &RouteConfig) -> Route {
        // `name-match: folded`: name globs compiled folded once; exact ones never fold
        let folded = rc.name_match == crate::config::NameMatch::Folded;
        let name = |p: &Option<Pattern>| match p {
            Some(p) if folded => Some(p.folded()),
            other => other.clone(),
        };
        Route {
            index,
            label: match &rc.path {
                PathMatch::Exact(p) => p.clone(),
                PathMatch::Prefix(p) => format!("{p}*"),
            },
            path: rc.path.clone(),
            mode: rc.mode,
            default_pool: rc.pool,
            upstream_path: rc.upstream_path.clone(),
            fingerprint: fingerprint(rc),
            check_headers: rc.check_headers,
            cache: rc.cache,
            dual_backends: rc.dual_backends,
            metrics: Default::default(),
            members: None,
            member: false,
            chain: crate::interceptors::Chain {
                servers: rc.interceptors.clone(),
            },
            guard: crate::auth::RouteGuard::new(rc),
            timeout: rc.limits.timeout,
            tool_timeouts: rc.limits.tool_timeouts.clone(),
            rules: Rules::new(
                rc.rules
                    .iter()
                    .map(|r| Rule {
                        method: r.method.clone(),
                        name: name(&r.name),
                        pool: r.pool,
                    })
                    .collect(),
            ),
        }
    }

    /// Whether any deadline is configured on this route.
    pub fn has_deadlines(&self) -> bool {
        self.timeout.is_some() || !self.tool_timeouts.is_empty()
    }

    /// The deadline for a request: the first matching tool timeout for `tools/call`, else the
    /// route's timeout.
    pub fn deadline(
        &self,
        method: Option<&str>,
        name: Option<&str>,
    ) -> Option<std::time::Duration> {
        let tool = (method == Some("tools/call")).then_some(name).flatten();
        tool.and_then(|t| {
            self.tool_timeouts
                .iter()
                .find(|(g, _)| g.is_match(t))
                .map(|(_, d)| *d)
        })
        .or(self.timeout)
    }

    /// Whether choosing the pool needs the MCP method or name at all.
    pub fn has_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The pool for a request with this method and name: the first matching rule's, else the
    /// route's own. A resource URI (`resources/read`, `subscribe`, `unsubscribe`) is read in
    /// every form the backend may execute it as, the forms authorization decides on
    /// (`auth::resource_uri`): a rule matches when it matches one of them.
    pub fn pool_for(&self, method: Option<&str>, name: Option<&str>) -> usize {
        if self.rules.is_empty() {
            return self.default_pool;
        }
        // (no allocation unless the name is a resource URI: this runs on the fast path)
        let (forms, one);
        let names: &[Cow<'_, str>] = match (method, name) {
            (Some(m), Some(uri)) if resource_uri::names_a_uri(m) => {
                forms = resource_uri::routing_forms(uri);
                &forms
            }
            (_, Some(name)) => {
                one = Cow::Borrowed(name);
                std::slice::from_ref(&one)
            }
            (_, None) => &[],
        };
        self.rules
            .first(method, names)
            .map_or(self.default_pool, |r| r.pool)
    }

    /// The path to send upstream for this request path (query kept by the caller).
    pub fn upstream_path<'a>(&'a self, path: &'a str) -> std::borrow::Cow<'a, str> {
        match (&self.path, &self.upstream_path) {
            (_, None) => path.into(),
            (PathMatch::Exact(_), Some(up)) => up.as_str().into(),
            (PathMatch::Prefix(prefix), Some(up)) => {
                format!("{up}{}", &path[prefix.len()..]).into()
            }
        }
    }

    pub(super) fn matches_path(&self, path: &str) -> bool {
        match &self.path {
            PathMatch::Exact(p) => p == path,
            PathMatch::Prefix(p) => path.starts_with(p.as_str()),
        }
    }
}

/// A digest of what in a route's config shapes its answers: its path and `upstream-path`,
/// mode, rules, `dual-backends`, `name-match` and, on a virtual route, the virtual server
/// (its `serverInfo`, instructions, and each member's pool, mode, path, prefix, includes,
/// excludes and renames, the renames in name order). The same config gives the same digest in
/// every process of one build (the pools' own config is in their signature).
fn fingerprint(rc: &RouteConfig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    let text = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}",
        rc.path, rc.upstream_path, rc.mode, rc.rules, rc.dual_backends, rc.name_match
    );
    text.hash(&mut h);
    if let Some(server) = &rc.virtual_server {
        (&server.name, &server.version, &server.instructions).hash(&mut h);
        for m in &server.members {
            let names = &m.names;
            let own = format!(
                "{:?} {:?} {:?} {:?}",
                m.pool, m.mode, m.upstream_path, names.prefix
            );
            (own, &names.name).hash(&mut h);
            for filter in [&names.tools, &names.prompts, &names.resources] {
                format!(
                    "{:?} {:?} {}",
                    filter.include, filter.exclude, filter.folded
                )
                .hash(&mut h);
                let mut renames: Vec<_> = filter.rename.iter().collect();
                renames.sort();
                renames.hash(&mut h);
            }
        }
    }
    h.finish()
}

/// The members of one virtual route.
#[derive(Debug)]
pub struct Members {
    /// The virtual server's config (its `serverInfo`, `instructions`, members).
    pub server: VirtualServer,
    /// One route per member, in config order; its label is `<path>#<member>`.
    pub routes: Vec<Arc<Route>>,
    /// What the members' lists exposed, and where each exposed name leads: for every caller,
    /// or for each caller where what members list may depend on the caller ([`NameMaps`]).
    pub names: NameMaps,
    /// Seals the merged cursors and the virtual session ids: the one sealer (`crate::sealer`) of
    /// `bridge.request-state-key-file` when set (the same on every replica), else of one random
    /// key for the life of the process (kept across reloads).
    pub cursors: Arc<CursorSealer>,
}
