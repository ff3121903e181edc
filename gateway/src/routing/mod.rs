//! Path routes and `Mcp-Method`/`Mcp-Name` rules, compiled once from config. A rule on a
//! resource URI reads it as the backend will (`auth::resource_uri`, shared with authorization).

mod members;
mod name_maps;
mod route;
mod rules;

pub use route::{Members, Route};

use crate::config::Config;

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
