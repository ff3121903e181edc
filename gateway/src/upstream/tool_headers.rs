//! What the gateway knows of a pool's tools' `Mcp-Param-*` headers (SEP-2243): for each
//! upstream path of the pool, tool name → the arguments its `inputSchema` marks
//! `x-mcp-header` (`mcp_wire::param_headers`), as the gateway saw them in that path's
//! `tools/list` answers. A 2026-07-28 `tools/call` the gateway writes itself (the era bridge's,
//! a virtual member's) mirrors those arguments from it; a 2026-07-28 server refuses the call
//! (-32020) without them.
//!
//! - Learnt from every `tools/list` answer the gateway reads or relays whole (the bridge's,
//!   virtual servers' merges), and by a listing of its own when a call names a tool it does
//!   not know ([`PathTools::resolve`]): one listing at a time per path (single flight: callers
//!   that come meanwhile wait for it), at most one per [`RELIST`] per path whatever names are
//!   asked (a made-up name costs no listing of its own), an entry older than [`FRESH`] listed
//!   again.
//! - Bounded: [`MAX_PATHS`] paths per pool (past it, the path listed longest ago makes room),
//!   [`MAX_TOOLS`] tools per path, [`MAX_PARAMS`] mirrored arguments per tool.
//! - What a listing says replaces what the path knew; a page relayed adds to it.
//!
//! Only backends' answers teach it, never a client's request.

use crate::sync::lock;
use mcp_wire::param_headers::{header_params, HeaderParam};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Upstream paths of one pool whose tools are kept.
pub const MAX_PATHS: usize = 64;
/// Tools kept per path.
pub const MAX_TOOLS: usize = 4096;
/// Mirrored arguments kept per tool.
pub const MAX_PARAMS: usize = 64;
/// How long what a list said is used without listing again.
pub const FRESH: Duration = Duration::from_secs(300);
/// The least time between two listings of one path.
pub const RELIST: Duration = Duration::from_secs(10);

/// A tool's mirrored arguments.
pub type Params = Arc<[HeaderParam]>;

/// A pool's tools' mirrored arguments, by upstream path.
#[derive(Default)]
pub struct ToolHeaders {
    paths: Mutex<HashMap<String, Arc<PathTools>>>,
}

impl std::fmt::Debug for ToolHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolHeaders")
            .field("paths", &lock(&self.paths).len())
            .finish()
    }
}

impl ToolHeaders {
    /// The tools of upstream path `path`.
    pub fn at(&self, path: &str) -> Arc<PathTools> {
        let mut paths = lock(&self.paths);
        if let Some(p) = paths.get(path) {
            return p.clone();
        }
        if paths.len() >= MAX_PATHS {
            let oldest = paths
                .iter()
                .min_by_key(|(_, p)| lock(&p.known).listed)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                paths.remove(&k);
            }
        }
        let p = Arc::new(PathTools::default());
        paths.insert(path.to_owned(), p.clone());
        p
    }
}

/// The tools of one upstream path.
#[derive(Default)]
pub struct PathTools {
    known: Mutex<Known>,
    /// Held while the path is listed.
    flight: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Known {
    tools: HashMap<String, (Instant, Params)>,
    /// When the last listing ended.
    listed: Option<Instant>,
}

/// A listed tool's name and mirrored arguments.
fn entry(tool: &Value) -> Option<(String, Params)> {
    let name = tool.get("name")?.as_str()?.to_owned();
    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    let mut params = header_params(schema);
    params.truncate(MAX_PARAMS);
    Some((name, params.into()))
}

impl PathTools {
    /// Learns the tools of a `tools/list` page (its `tools` array).
    pub fn learn(&self, tools: &Value) {
        let Some(tools) = tools.as_array() else {
            return;
        };
        let now = Instant::now();
        let mut known = lock(&self.known);
        for (name, params) in tools.iter().filter_map(entry) {
            if known.tools.len() < MAX_TOOLS || known.tools.contains_key(&name) {
                known.tools.insert(name, (now, params));
            }
        }
    }

    /// What a whole listing said, in place of what was known.
    fn listed(&self, tools: Option<Vec<Value>>) {
        let now = Instant::now();
        let mut known = lock(&self.known);
        known.listed = Some(now);
        if let Some(tools) = tools {
            known.tools = tools
                .iter()
                .filter_map(entry)
                .take(MAX_TOOLS)
                .map(|(n, p)| (n, (now, p)))
                .collect();
        }
    }

    /// `name`'s arguments when known (`fresh`: learnt within [`FRESH`]); whether the path
    /// was listed within [`RELIST`].
    fn lookup(&self, name: &str, fresh: bool) -> (Option<Params>, bool) {
        let known = lock(&self.known);
        let now = Instant::now();
        let found = known
            .tools
            .get(name)
            .filter(|(at, _)| !fresh || now.duration_since(*at) < FRESH)
            .map(|(_, p)| p.clone());
        let lately = known.listed.is_some_and(|t| now.duration_since(t) < RELIST);
        (found, lately)
    }

    /// Tool `name`'s mirrored arguments as last learnt, without listing; `None` when no list
    /// named it.
    pub fn known(&self, name: &str) -> Option<Params> {
        self.lookup(name, false).0
    }

    /// Tool `name`'s mirrored arguments: as known when fresh, else after a listing by `list`
    /// (every tool of the path, `None` when it failed), one at a time, at most one per
    /// [`RELIST`]; none for a tool no listing names.
    pub async fn resolve<F, Fut>(&self, name: &str, list: F) -> Params
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Option<Vec<Value>>>,
    {
        let settled = || match self.lookup(name, true) {
            (Some(p), _) => Some(p),
            (None, true) => Some(self.lookup(name, false).0.unwrap_or_default()),
            (None, false) => None,
        };
        if let Some(p) = settled() {
            return p;
        }
        let _flight = self.flight.lock().await;
        if let Some(p) = settled() {
            return p;
        }
        self.listed(list().await);
        self.lookup(name, false).0.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn tool(name: &str, header: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": header}}}})
    }

    #[tokio::test]
    async fn a_known_tool_costs_no_listing_and_an_unknown_one_lists_once() {
        let tools = ToolHeaders::default();
        let path = tools.at("/mcp");
        path.learn(&json!([tool("a", "Region")]));
        let listings = AtomicUsize::new(0);
        let list = || async {
            listings.fetch_add(1, Ordering::SeqCst);
            Some(vec![tool("a", "Region"), tool("b", "Zone")])
        };
        assert_eq!(path.resolve("a", list).await[0].token, "Region");
        assert_eq!(listings.load(Ordering::SeqCst), 0);
        assert_eq!(path.resolve("b", list).await[0].token, "Zone");
        assert_eq!(listings.load(Ordering::SeqCst), 1);
        // made-up names right after a listing: no listing of their own
        for n in 0..100 {
            assert!(path.resolve(&format!("nope-{n}"), list).await.is_empty());
        }
        assert_eq!(listings.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_listing() {
        let tools = ToolHeaders::default();
        let path = tools.at("/mcp");
        let listings = AtomicUsize::new(0);
        let list = || async {
            listings.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            Some(vec![tool("a", "Region")])
        };
        let all = (0..20).map(|_| path.resolve("a", list));
        for params in futures_util::future::join_all(all).await {
            assert_eq!(params[0].token, "Region");
        }
        assert_eq!(listings.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn paths_and_tools_are_bounded() {
        let tools = ToolHeaders::default();
        for n in 0..(MAX_PATHS + 10) {
            tools.at(&format!("/mcp/{n}"));
        }
        assert_eq!(lock(&tools.paths).len(), MAX_PATHS);
        let path = tools.at("/mcp");
        let many: Vec<Value> = (0..MAX_TOOLS + 10)
            .map(|n| tool(&format!("t{n}"), "Region"))
            .collect();
        path.learn(&Value::Array(many));
        assert_eq!(lock(&path.known).tools.len(), MAX_TOOLS);
    }
}
