//! Path routes and `Mcp-Method`/`Mcp-Name` rules, compiled once from config. A rule on a
//! resource URI reads it as the backend will (`auth::resource_uri`, shared with authorization).

mod members;
mod rules;

pub use members::Members;
use rules::{Rule, Rules};

use crate::auth::resource_uri;
use crate::config::Pattern;
use crate::config::{Config, Mode, PathMatch, RouteConfig};
use std::borrow::Cow;

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
    /// Whether header/body disagreement is answered with -32020.
    pub check_headers: bool,
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
}

impl Route {
    fn compile(index: usize, rc: &RouteConfig) -> Route {
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
            check_headers: rc.check_headers,
            dual_backends: rc.dual_backends,
            metrics: Default::default(),
            members: None,
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

    fn matches_path(&self, path: &str) -> bool {
        match &self.path {
            PathMatch::Exact(p) => p == path,
            PathMatch::Prefix(p) => path.starts_with(p.as_str()),
        }
    }
}

/// All routes, in match order.
#[derive(Debug)]
pub struct Router {
    routes: Vec<std::sync::Arc<Route>>,
}

impl Router {
    /// Compiles the config's routes.
    pub fn new(config: &Config) -> Router {
        let routes: Vec<std::sync::Arc<Route>> = config
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut route = Route::compile(i, r);
                route.members = Members::compile(i, r, config);
                std::sync::Arc::new(route)
            })
            .collect();
        Router { routes }
    }

    /// The routes, in match order.
    pub fn routes(&self) -> &[std::sync::Arc<Route>] {
        &self.routes
    }

    /// The first route taking this path (query excluded).
    pub fn route(&self, path: &str) -> Option<&std::sync::Arc<Route>> {
        self.routes.iter().find(|r| r.matches_path(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(yaml: &str) -> Router {
        Router::new(&crate::config::parse(yaml).unwrap())
    }

    const YAML: &str = r#"
pools: { a: { backends: [127.0.0.1:1] }, b: { backends: [127.0.0.1:2] }, c: { backends: [127.0.0.1:3] } }
routes:
  - path: /mcp
    pool: a
    rules:
      - match: { method: tools/call, name: "report_*" }
        pool: b
      - match: { method: "resources/*" }
        pool: c
  - path-prefix: /t/
    upstream-path: /mcp/
    pool: c
"#;

    #[test]
    fn first_matching_rule_wins() {
        let r = router(YAML);
        let route = r.route("/mcp").unwrap();
        assert_eq!(route.pool_for(Some("tools/call"), Some("report_q3")), 1);
        assert_eq!(route.pool_for(Some("tools/call"), Some("whoami")), 0);
        assert_eq!(route.pool_for(Some("tools/list"), None), 0);
        assert_eq!(
            route.pool_for(Some("resources/read"), Some("file:///a/b")),
            2
        );
        assert_eq!(route.pool_for(None, None), 0);
    }

    #[test]
    fn name_globs_cross_slashes_in_uris() {
        let yaml = "pools: { a: { backends: [127.0.0.1:1] }, b: { backends: [127.0.0.1:2] } }\nroutes: [ { path: /mcp, pool: a, rules: [ { match: { name: \"file:///docs/*\" }, pool: b } ] } ]\n";
        let r = router(yaml);
        assert_eq!(
            r.route("/mcp")
                .unwrap()
                .pool_for(Some("resources/read"), Some("file:///docs/a/b.md")),
            1
        );
    }

    #[test]
    fn resource_uris_route_by_the_form_the_backend_executes() {
        let yaml = "pools: { a: { backends: [127.0.0.1:1] }, admin: { backends: [127.0.0.1:2] } }\nroutes: [ { path: /mcp, pool: a, rules: [ { match: { method: \"resources/*\", name: \"admin://*\" }, pool: admin } ] } ]\n";
        let r = router(yaml);
        let route = r.route("/mcp").unwrap();
        for uri in [
            "admin://secret",
            "ADMIN://secret",
            " admin://secret",
            "aDmIn://users/42",
            "\tadmin://secret",
            "admin://users/%34%32",
        ] {
            assert_eq!(
                route.pool_for(Some("resources/read"), Some(uri)),
                1,
                "{uri:?}"
            );
            assert_eq!(
                route.pool_for(Some("resources/subscribe"), Some(uri)),
                1,
                "{uri:?}"
            );
        }
        assert_eq!(
            route.pool_for(Some("resources/read"), Some("public://info")),
            0
        );
        // a tool name is a name, not a URI: no normalization
        let yaml = "pools: { a: { backends: [127.0.0.1:1] }, b: { backends: [127.0.0.1:2] } }\nroutes: [ { path: /mcp, pool: a, rules: [ { match: { name: \"admin://*\" }, pool: b } ] } ]\n";
        let r = router(yaml);
        let route = r.route("/mcp").unwrap();
        assert_eq!(route.pool_for(Some("tools/call"), Some("ADMIN://x")), 0);
        assert_eq!(route.pool_for(Some("resources/read"), Some("ADMIN://x")), 1);
        assert_eq!(route.pool_for(None, None), 0);
    }

    #[test]
    fn tool_deadlines_win_over_the_route_deadline() {
        let yaml = "pools: { a: { backends: [127.0.0.1:1] } }\nroutes: [ { path: /mcp, pool: a, limits: { timeout-ms: 1000, tool-timeouts: { \"slow_*\": 5000 } } } ]\n";
        let r = router(yaml);
        let route = r.route("/mcp").unwrap();
        let ms = |d: Option<std::time::Duration>| d.map(|d| d.as_millis());
        assert_eq!(
            ms(route.deadline(Some("tools/call"), Some("slow_report"))),
            Some(5000)
        );
        assert_eq!(
            ms(route.deadline(Some("tools/call"), Some("fast"))),
            Some(1000)
        );
        assert_eq!(ms(route.deadline(Some("tools/list"), None)), Some(1000));
    }

    #[test]
    fn exact_and_prefix_paths() {
        let r = router(YAML);
        assert!(r.route("/mcp/").is_none());
        assert!(r.route("/nope").is_none());
        let t = r.route("/t/x/y").unwrap();
        assert_eq!(t.upstream_path("/t/x/y"), "/mcp/x/y");
        assert_eq!(r.route("/mcp").unwrap().upstream_path("/mcp"), "/mcp");
    }
}
