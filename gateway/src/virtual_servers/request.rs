//! [`Virtual`]: one request on a virtual route while the gateway asks its members (the
//! members, the snapshot the request started with, the caller, the member deadline), and the
//! member requests it makes ([`Virtual::ask_of`]). The rest of `Virtual`'s methods are with
//! what they do: lists (`lists.rs`), names (`calls.rs`), listens (`listen.rs`).

use super::fanout;
use crate::auth::Principal;
use crate::request::Gateway;
use crate::routing::{Members, Route};
use bytes::Bytes;
use mcp_wire::Era;
use pingora_prometheus::prometheus::IntCounterVec;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// A member's deadline for what the gateway merges, unless the route sets `limits.timeout-ms`.
pub(super) const MEMBER_DEADLINE: Duration = Duration::from_secs(10);

/// One request on a virtual route, while the gateway asks its members.
pub(super) struct Virtual<'a> {
    pub(super) gw: &'a Gateway,
    /// What member requests take from the client's request.
    pub(super) parent: super::member::Parent,
    pub(super) route: &'a Route,
    pub(super) members: &'a Members,
    /// The config snapshot the client request started with (its member requests read theirs).
    pub(super) state: Arc<crate::state::State>,
    /// The bytes merged lists hold (`limits.max-merged-list-bytes`).
    pub(super) budget: Arc<crate::federation::budget::ListBudget>,
    pub(super) principal: Option<Arc<Principal>>,
    pub(super) era: Era,
    pub(super) deadline: Duration,
    pub(super) events: &'a IntCounterVec,
    /// A legacy client's member sessions (member name → its session id there).
    pub(super) sessions: Option<std::collections::BTreeMap<String, String>>,
    /// Who admission counts the caller as.
    pub(super) identity: Option<Arc<str>>,
    /// Whose names map the request reads and teaches (`NameMaps::caller`, `routing/name_maps.rs`).
    pub(super) names_caller: Option<Arc<str>>,
}

impl<'a> Virtual<'a> {
    /// The virtual route's request `ctx` (on `client`), while its members are asked.
    pub(super) fn of(
        gw: &'a Gateway,
        client: &impl crate::downstream::client::Client,
        ctx: &crate::request::ctx::RequestCtx,
        route: &'a Route,
        members: &'a Members,
    ) -> Virtual<'a> {
        let parent = super::member::Parent::of(client);
        let principal = ctx.principal.as_deref().map(|p| &*p.id);
        let names_caller = members
            .names
            .caller(principal, &client.req_header().headers);
        Virtual {
            gw,
            parent,
            route,
            members,
            state: ctx.state.clone(),
            budget: gw.list_budget.clone(),
            principal: ctx.principal.clone(),
            era: ctx.era,
            deadline: route.deadline(None, None).unwrap_or(MEMBER_DEADLINE),
            events: &gw.metrics.virtual_members,
            sessions: None,
            identity: ctx.admitted.identity.clone(),
            names_caller,
        }
    }

    pub(super) fn member_name(&self, i: usize) -> &str {
        &self.members.server.members[i].names.name
    }

    /// Whose share of the merged lists' bytes this request counts in: the principal, else
    /// the client identity admission counts it as.
    pub(super) fn budget_caller(&self) -> Arc<str> {
        match (&self.principal, &self.identity) {
            (Some(p), _) => p.id.clone(),
            (None, Some(id)) => id.clone(),
            (None, None) => "-".into(),
        }
    }

    /// The names map this caller reads and teaches (its own where members list per caller).
    pub(super) fn names(&self) -> Arc<std::sync::RwLock<crate::federation::names::NameMap>> {
        self.members.names.of(self.names_caller.as_deref())
    }

    /// The caller a cursor is given to (`""`: anonymous).
    pub(super) fn principal_key(&self) -> &str {
        self.principal.as_deref().map_or("", |p| &*p.id)
    }

    pub(super) fn server_info(&self) -> Value {
        let server = &self.members.server;
        json!({"name": server.name, "version": server.version})
    }

    /// Whether the client is of the session era (answers without the 2026-07-28 keys).
    pub(super) fn legacy(&self) -> bool {
        self.era == Era::Legacy
    }

    /// A member request: `body` for member `i`, in the client's session there.
    pub(super) fn ask_of(&self, i: usize, body: Bytes) -> fanout::Ask {
        let name = self.member_name(i);
        fanout::Ask {
            state: self.state.clone(),
            route: self.members.routes[i].clone(),
            body,
            principal: self.principal.clone(),
            era: self.era,
            session: self.sessions.as_ref().and_then(|s| s.get(name)).cloned(),
            identity: self.identity.clone(),
            resume: None,
            served_by: None,
        }
    }

    /// A digest of the backends behind every member (each pool a member route may use:
    /// [`crate::upstream::Pool::signature`]), which the cache keys the virtual server's own
    /// answers by: a member that goes down, or a pool that changes, is a new key.
    pub(super) fn backends(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        for route in &self.members.routes {
            for pool in route.pools().filter_map(|p| self.state.pool(p).ok()) {
                pool.signature().hash(&mut h);
            }
        }
        h.finish()
    }

    /// The pools of its members: the scopes of its merged answers (a change one announces drops
    /// them).
    pub(super) fn scopes(&self) -> crate::cache::scopes::Scopes {
        let pools = self.members.routes.iter().flat_map(|route| route.pools());
        let names = pools.filter_map(|p| self.state.pool(p).ok().map(|p| p.name.clone()));
        names.collect()
    }

    pub(super) fn count(&self, member: &str, event: &str) {
        self.events
            .with_label_values(&[&self.route.label, member, event])
            .inc();
    }
}
