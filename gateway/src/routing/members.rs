//! A virtual route's members, compiled: one plain [`Route`] per member (its pool, mode and
//! upstream path; the virtual route's limits and `auth`; no rules, no `authz`: authorization
//! reads the exposed names, on the virtual route), what their lists exposed (`NameMap`), and
//! the key sealing the virtual server's cursors.

use super::Route;
use crate::config::{Config, RouteConfig, VirtualServer};
use crate::federation::cursor::CursorSealer;
use crate::federation::names::NameMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The members of one virtual route.
#[derive(Debug)]
pub struct Members {
    /// The virtual server's config (its `serverInfo`, `instructions`, members).
    pub server: VirtualServer,
    /// One route per member, in config order; its label is `<path>#<member>`.
    pub routes: Vec<Arc<Route>>,
    /// What the members' lists exposed, and where each exposed name leads.
    pub names: Mutex<NameMap>,
    /// Seals the merged cursors: `bridge.request-state-key-file` when set (the same on every
    /// replica), else one random key for the life of the process (kept across reloads).
    pub cursors: Arc<CursorSealer>,
}

impl Members {
    /// The members of the virtual route `rc` (at `index` in the config).
    pub(super) fn compile(index: usize, rc: &RouteConfig, config: &Config) -> Option<Members> {
        let mut server = rc.virtual_server.clone()?;
        if rc.name_match == crate::config::NameMatch::Folded {
            // the members' filters read names as authorization does on this route
            for m in &mut server.members {
                m.names = m.names.folded();
            }
        }
        let routes = server
            .members
            .iter()
            .map(|m| {
                let member = RouteConfig {
                    mode: m.mode,
                    pool: m.pool,
                    upstream_path: m.upstream_path.clone().or_else(|| rc.upstream_path.clone()),
                    // the body is rewritten (the member's own name): checked on the virtual route
                    check_headers: false,
                    rules: Vec::new(),
                    authz: Vec::new(),
                    capture: None,
                    virtual_server: None,
                    ..rc.clone()
                };
                let mut route = Route::compile(index, &member);
                route.label = format!("{}#{}", route.label, m.names.name);
                Arc::new(route)
            })
            .collect();
        let names = server.members.iter().map(|m| m.names.clone()).collect();
        Some(Members {
            server,
            routes,
            names: Mutex::new(NameMap::new(names)),
            cursors: sealer(config.bridge.request_state_key),
        })
    }
}

/// The cursor sealer: of the configured key, or the process's random one.
fn sealer(key: Option<[u8; 32]>) -> Arc<CursorSealer> {
    static RANDOM: OnceLock<Arc<CursorSealer>> = OnceLock::new();
    match key {
        Some(key) => Arc::new(CursorSealer::new(key)),
        None => RANDOM
            .get_or_init(|| Arc::new(CursorSealer::random()))
            .clone(),
    }
}
