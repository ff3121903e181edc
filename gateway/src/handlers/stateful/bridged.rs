//! The stateful path's door to `crate::bridge::legacy_clients` (a legacy client's session on
//! 2026-07-28 backends): the request as the bridge takes it, bounded by the route's deadline
//! as on the native path, and the backend that answered kept for the access log. The bridge
//! owns the behaviour.

use super::call::Call;
use crate::bridge::legacy_clients::{self, Request, Target};
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::Route;
use crate::session::{Requester, SessionRecord};
use crate::upstream::deadline::{self, within};
use crate::upstream::Pool;
use mcp_wire::RequestId;
use std::sync::Arc;

/// A legacy `initialize` on a route whose backends are bridged.
pub(super) async fn initialize(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    routed: (&Arc<Pool>, &Route),
    caller: Requester,
    call: Call,
) -> Handled {
    let quota = super::quota::quota(ctx);
    let path: String = routed
        .1
        .upstream_path(session.req_header().uri.path())
        .into();
    let request = Request::Initialize {
        caller: &caller,
        params: call.params.clone(),
        id: &call.id,
        quota,
    };
    serve(gw, session, ctx, routed, &path, request, Some(&call)).await
}

/// A POST in a bridged session.
pub(super) async fn call(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    routed: (&Arc<Pool>, &Route),
    rec: SessionRecord,
    call: Call,
) -> Handled {
    let path = rec.path.clone();
    let request = Request::Post {
        rec,
        body: &call.body,
        id: &call.id,
        repeatable: call.repeatable,
    };
    serve(gw, session, ctx, routed, &path, request, Some(&call)).await
}

/// GET or DELETE in a bridged session.
pub(super) async fn get_or_delete(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    routed: (&Arc<Pool>, &Route),
    rec: SessionRecord,
) -> Handled {
    let path = rec.path.clone();
    let request = if session.req_header().method == http::Method::DELETE {
        Request::Delete(rec)
    } else {
        Request::Get(rec)
    };
    serve(gw, session, ctx, routed, &path, request, None).await
}

/// Hands `request` to the bridge, within the route's deadline for `call` (a GET or DELETE has
/// none): the whole exchange, its rounds and the client's answers to the server's requests
/// within it included (on a native session they are part of the one POST answer too). Past
/// it the exchange is dropped (its upstream connection closed, its waits ended) and the
/// client gets -32012 ([`crate::forward::bridged::past_deadline`]).
async fn serve(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    path: &str,
    request: Request<'_>,
    call: Option<&Call>,
) -> Handled {
    let principal = ctx.principal.clone();
    let list = call.and_then(|c| c.filter);
    let pins = ctx.state.pins.clone();
    let filter = move |body: &[u8]| {
        let json = Some("application/json");
        let at = (route, pool.name.as_str());
        crate::forward::filtered::filter_list(&pins, at, principal.as_deref(), list?, json, body)
    };
    let to = Target {
        pool,
        dual: route.dual_backends,
        path,
        filter: list.is_some().then_some(&filter as _),
        max_subscriptions: ctx.state.config.sessions.max_subscriptions,
    };
    let deadline = call.and_then(|c| c.deadline);
    let until = deadline::start(deadline);
    let done = legacy_clients::serve(&gw.bridge, &gw.sessions, session, to, request);
    let Some(done) = within(until, done).await else {
        let e = GatewayError::bridged_deadline(&pool.name, "forward", deadline.unwrap_or_default());
        let id = call.map_or_else(RequestId::null, |c| c.id.clone());
        return crate::forward::bridged::past_deadline(session, e, &id).await;
    };
    let served = done?;
    if served.backend.is_some() {
        ctx.backend = served.backend;
    }
    Ok(())
}
