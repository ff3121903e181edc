//! The stateless and auto paths' door to `crate::bridge::modern_clients` (2026-07-28 clients on
//! legacy backends): the request as the bridge takes it, bounded by the route's deadline as
//! on the native path, and the one way out of the bridge: a backend whose `initialize` opened
//! no session is no legacy session server, so the request goes to it as received (its era
//! unknown until probed again). The bridge owns the behaviour.

use crate::auth::Caller;
use crate::bridge::modern_clients::{self, Pooled, Target};
use crate::classify::Routed;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::forward::relay::end_with_error;
use crate::forward::send::{forward_any, Outbound};
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::Route;
use crate::upstream::deadline::{self, within};
use crate::upstream::Pool;
use bytes::Bytes;
use mcp_wire::RequestId;
use std::sync::Arc;

/// Serves the request (its body read and checked) on the pool's legacy backends.
pub(crate) async fn forward(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (route, routed): (&Route, &Routed),
    pool: &Arc<Pool>,
    body: Bytes,
) -> Handled {
    let path = route
        .upstream_path(session.req_header().uri.path())
        .into_owned();
    let principal = ctx.principal.clone();
    let list = routed.filter;
    let pins = ctx.state.pins.clone();
    let filter = move |body: &[u8]| {
        let json = Some("application/json");
        let at = (route, pool.name.as_str());
        crate::forward::filtered::filter_list(&pins, at, principal.as_deref(), list?, json, body)
    };
    // the bridge's own requests for this one are made for its caller
    let caller = Caller::of(&session.req_header().extensions);
    let to = Target {
        pool,
        path: &path,
        caller: &caller,
        config: &ctx.state.config.bridge,
        filter: list.is_some().then_some(&filter as _),
        cache: &ctx.state.cache,
    };
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    // The route's deadline bounds each request as one exchange, as on the native path: a
    // call parked for input is bounded per round (the client's time before its retry is
    // `bridge.input-ttl-s`'s), and a `subscriptions/listen` stream not at all (a GET stream's
    // counterpart).
    let deadline = routed.deadline.filter(|_| !routed.listen);
    let until = deadline::start(deadline);
    let serve = modern_clients::serve(&gw.bridge, session, to, &body, &id);
    let Some(served) = within(until, serve).await else {
        let e = GatewayError::bridged_deadline(&pool.name, "reverse", deadline.unwrap_or_default());
        return past_deadline(session, e, &id).await;
    };
    let served = match served? {
        Pooled::Served(served) => served,
        Pooled::NoSession(backend) => {
            pool.opened_no_session(&backend);
            return pass_through(gw, session, ctx, (route, routed), pool, body).await;
        }
    };
    if served.backend.is_some() {
        ctx.backend = served.backend;
    }
    Ok(())
}

/// A bridged exchange past its route's deadline (dropped, which closed its upstream exchange:
/// the backend sees the cancel): the native path's answer, -32012 as the whole answer when the
/// client has heard nothing yet, else as the last event of its SSE answer (a JSON answer cut
/// midway closes the connection).
pub(crate) async fn past_deadline(
    session: &mut impl Client,
    err: GatewayError,
    id: &RequestId,
) -> Handled {
    let Some(head) = session.response_written() else {
        return Err(err.into());
    };
    let sse = crate::stream::is_stream(head);
    end_with_error(session, sse, &err, id).await?;
    Ok(())
}

/// Sends the request, its body as received, to a backend of `pool` that serves it natively
/// (the one whose era just became unknown), as any stateless request.
async fn pass_through(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (route, routed): (&Route, &Routed),
    pool: &Arc<Pool>,
    body: Bytes,
) -> Handled {
    let out = Outbound {
        route,
        body,
        repeatable: false,
        deadline: routed.deadline,
        stateless: true,
        filter: routed.filter,
        keep: None,
    };
    forward_any(gw, session, ctx, pool, out).await
}
