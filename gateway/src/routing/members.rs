//! A virtual route's members, compiled: one plain [`Route`] per member (its pool, mode and
//! upstream path; the virtual route's limits and `auth`; no rules, no `authz`: authorization
//! reads the exposed names, on the virtual route), what their lists exposed (a `NameMap`, kept
//! in `name_maps.rs`), and the sealer of the virtual server's cursors. The `Members` type
//! sits beside `Route` in `route.rs` (each holds the other).

use super::name_maps::{Listing, NameMaps};
use super::route::{Members, Route};
use crate::config::{Config, RouteConfig, VirtualServer};
use crate::federation::cursor::CursorSealer;
use crate::federation::names::NameMap;
use std::sync::Arc;

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
                    // the virtual route runs its chain once, on the client's request and the
                    // answer the client gets: a member's request is not intercepted again
                    interceptors: Vec::new(),
                    ..rc.clone()
                };
                let mut route = Route::compile(index, &member);
                route.label = format!("{}#{}", route.label, m.names.name);
                route.member = true;
                Arc::new(route)
            })
            .collect();
        let names: Vec<_> = server.members.iter().map(|m| m.names.clone()).collect();
        let listing = listing(&server, config);
        Some(Members {
            server,
            routes,
            names: NameMaps::new(NameMap::new(names), listing),
            cursors: Arc::new(CursorSealer::new(crate::sealer::sealer(
                config.bridge.request_state_key,
            ))),
        })
    }
}

/// What `server`'s members' lists may depend on besides the config: a member whose pool sends
/// something derived from the caller's principal (its exchanged token, identity headers), or
/// gets the client's own `Authorization` (a gateway without `auth` passes it on, unless the
/// pool sets its own), may list differently for each caller.
fn listing(server: &VirtualServer, config: &Config) -> Listing {
    let pools = || {
        server
            .members
            .iter()
            .filter_map(|m| config.pools.get(m.pool))
    };
    let principal = pools().any(|p| {
        p.upstream_auth.token_exchange.is_some() || p.identity_headers.names().next().is_some()
    });
    let own_authorization = |p: &crate::config::PoolConfig| {
        let auth = &p.upstream_auth;
        auth.client_credentials.is_some()
            || auth.token_exchange.is_some()
            || auth.headers.iter().any(|h| h.name == "authorization")
    };
    let authorization = config.auth.is_none() && pools().any(|p| !own_authorization(p));
    Listing {
        principal,
        authorization,
    }
}
