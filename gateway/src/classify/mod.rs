//! The classification of a request whose method and name are known (from its body, or from
//! headers the body is checked against before anything is forwarded): the method label, the
//! tool noted for metrics, the authorization decision by the name the backend will execute,
//! the per-tool rate, and where it goes on its route ([`Routed`]: the pool its rules pick, its
//! deadline). Every path (the fast path, each gateway-driven handler, a virtual server's)
//! calls [`classify`] once, before anything is forwarded, and reads what it returned from then
//! on: nothing reads the body's method and name again. A virtual server's member request is
//! decided on the member's route by the same function ([`decide`]: all of it but the per-tool
//! rate, which the caller was charged on the virtual route).

mod audit;

use crate::error::GatewayError;
use crate::request::ctx::RequestCtx;
use crate::routing::Route;
use mcp_wire::method_label;
use std::sync::Arc;

/// The one classification step of a request whose method and name are known (from its body,
/// or from headers the body is checked against before anything is forwarded): what
/// [`decide`] decides, then the per-tool rate charged, except on a virtual route's member
/// (its caller was charged on the virtual route, by the exposed name: a legacy client's
/// member request, which the member's session handler classifies, is not charged twice).
/// Each path runs it once: the fast path with checked headers here, the gateway-driven paths
/// after reading the body.
pub(crate) fn classify(
    ctx: &mut RequestCtx,
    route: &Route,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<Routed, GatewayError> {
    let routed = decide(ctx, route, method, name)?;
    if !route.member {
        charge(ctx, method, name)?;
    }
    Ok(routed)
}

/// What a request of `method` and `name` is on `route`, without charging the per-tool rate:
/// the method label, the tool noted for metrics, the authorization decision and the list
/// filter, the pool and the deadline. [`classify`] charges the rate after it; a virtual
/// server's member request runs it alone on the member's route (the caller was charged
/// once, on the virtual route).
pub(crate) fn decide(
    ctx: &mut RequestCtx,
    route: &Route,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<Routed, GatewayError> {
    let label = method_label(method);
    ctx.method_label = label;
    ctx.note_tool(method, name);
    let decided = authorize(ctx, route, method, name);
    audit::decision(ctx, route, (method, name), decided.as_ref().map(|_| ()));
    let filter = decided?;
    // `audit.required`: a call is not sent while its record could not be written
    if let Some(why) = method.and_then(|m| ctx.state.audit.refuses(m)) {
        let method = method.unwrap_or_default();
        return Err(GatewayError::audit_unavailable(method, why));
    }
    // a session's requests go to its route's pool (its rules pick no other): the pins checked
    // are the pool the backend is in
    let in_session = route.mode == crate::config::Mode::Stateful
        || (route.mode == crate::config::Mode::Auto && ctx.era == mcp_wire::Era::Legacy);
    let pool = match in_session {
        true => route.default_pool,
        false => route.pool_for(method, name),
    };
    check_pins(ctx, route, pool, method, name)?;
    let filter = filter.or_else(|| pinned_list(ctx, route, pool, method));
    Ok(Routed {
        method: label,
        pool,
        deadline: route.deadline(method, name),
        listen: method == Some("subscriptions/listen"),
        filter,
    })
}

/// Whether any pool a request on `route` may go to (a virtual route: any member's) keeps
/// tool pins: then its names matter and its `tools/list` answers are read whole.
pub(crate) fn pinned(ctx: &RequestCtx, route: &Route) -> bool {
    let pins = &ctx.state.pins;
    let pinned = |r: &Route| {
        r.pools().any(|i| {
            ctx.state
                .config
                .pools
                .get(i)
                .is_some_and(|p| pins.pinned(&p.name))
        })
    };
    match &route.members {
        Some(m) => m.routes.iter().any(|r| pinned(r)),
        None => pinned(route),
    }
}

/// A `tools/list` whose answer the pins read (its pool's, or a virtual route's members'): it
/// is filtered (and, on a virtual route, the merged answer is not cached: an approval shows
/// the tool at once).
fn pinned_list(
    ctx: &RequestCtx,
    route: &Route,
    pool: usize,
    method: Option<&str>,
) -> Option<&'static str> {
    if method != Some("tools/list") {
        return None;
    }
    let pinned = match &route.members {
        Some(_) => pinned(ctx, route),
        None => (ctx.state.config.pools.get(pool)).is_some_and(|p| ctx.state.pins.pinned(&p.name)),
    };
    pinned.then_some("tools/list")
}

/// A `tools/call` of a tool the pool's pins hold back (enforce mode) is refused with -32045,
/// by the name the backend will execute (a virtual route's call is checked on its member's
/// route, with the member's own name).
pub(crate) fn check_pins(
    ctx: &RequestCtx,
    route: &Route,
    pool: usize,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<(), GatewayError> {
    let (Some("tools/call"), Some(tool), None) = (method, name, &route.members) else {
        return Ok(());
    };
    let Some(p) = ctx.state.config.pools.get(pool) else {
        return Ok(());
    };
    ctx.state
        .pins
        .check_call(&p.name, tool)
        .map_err(|why| crate::pinning::quarantined(&p.name, tool, why))
}

/// Charges a `tools/call` of `name` to the caller's per-tool rate (`limits.tool-rate`).
fn charge(ctx: &RequestCtx, method: Option<&str>, name: Option<&str>) -> Result<(), GatewayError> {
    if let (Some("tools/call"), Some(tool)) = (method, name) {
        let identity = ctx.admitted.identity.as_deref();
        ctx.state.admission.admit_tool(identity, tool)?;
    }
    Ok(())
}

/// Whether the caller may call `method` on `name` (the name the backend will execute); `Ok`
/// holds the list whose answer the route's rules filter for this caller, if any.
fn authorize(
    ctx: &RequestCtx,
    route: &Route,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<Option<&'static str>, GatewayError> {
    if !route.guard.has_rules() {
        return Ok(None);
    }
    let mut filter = None;
    if route.guard.filters(method) {
        filter = match method {
            Some("tools/list") => Some("tools/list"),
            Some("prompts/list") => Some("prompts/list"),
            Some("resources/list") => Some("resources/list"),
            Some("resources/templates/list") => Some("resources/templates/list"),
            _ => None,
        };
    }
    let principal = ctx.principal.as_deref();
    route
        .guard
        .decide(principal, method, name)
        .map_err(|denied| refusal(ctx, denied))?;
    Ok(filter)
}

/// The answer to a denial: 403 -32024 (naming the metadata document), or -32031 for a URI
/// that cannot be decided.
pub(crate) fn refusal(ctx: &RequestCtx, denied: crate::auth::Denied) -> GatewayError {
    if let Some(why) = denied.undecidable {
        return GatewayError::undecidable_name(why.as_str());
    }
    let metadata = ctx
        .state
        .auth
        .as_ref()
        .map(|a| a.forbidden(denied.scope.as_deref()));
    metadata.unwrap_or_else(|| GatewayError::forbidden(denied.scope.as_deref(), ""))
}

/// The principal of a request, for the session binding.
pub(crate) fn principal_id(ctx: &RequestCtx) -> Option<Arc<str>> {
    ctx.principal.as_ref().map(|p| p.id.clone())
}

/// Where a read and classified request goes on its route.
pub(crate) struct Routed {
    /// The method, as its bounded label (`tools/call`, `other`, `none`): what the cache and
    /// the other decisions read, where the context's copy is for metrics and logs only.
    pub method: &'static str,
    /// Index into the config's pools.
    pub pool: usize,
    /// Deadline for the whole exchange.
    pub deadline: Option<std::time::Duration>,
    /// A `subscriptions/listen` (its filter is checked first).
    pub listen: bool,
    /// The list method whose answer the route's `authz` rules filter for this caller
    /// (`tools/list`, ...): the answer is read whole and filtered, and never cached.
    pub filter: Option<&'static str>,
}

impl Routed {
    /// Where a request of `method` and `name` goes on `route`.
    pub(crate) fn of(route: &Route, method: Option<&str>, name: Option<&str>) -> Routed {
        Routed {
            method: method_label(method),
            pool: route.pool_for(method, name),
            deadline: route.deadline(method, name),
            listen: method == Some("subscriptions/listen"),
            filter: None,
        }
    }
}

/// Whether the request goes to the reverse era bridge (a 2026-07-28 request to a pool of
/// legacy backends: `bridge::modern_clients::takes`).
pub(crate) fn takes(ctx: &RequestCtx, pool: &crate::upstream::Pool) -> bool {
    crate::bridge::modern_clients::takes(ctx.era, &ctx.state.config.bridge, pool)
}
