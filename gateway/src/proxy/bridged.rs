//! The hook from stateless and auto routes into the reverse era bridge
//! (`crate::bridge::pooled`): a 2026-07-28 request whose pool has only legacy backends goes
//! inside a backend session the gateway keeps. Only the request context is handled here, and
//! the one way out of the bridge: a backend whose `initialize` opened no session is no legacy
//! session server, so the request goes to it as received (its era unknown until probed again).

use super::ctx::RequestCtx;
use super::relay::{end_with_error, within};
use super::stateless::{forward_any, Outbound};
use super::{Gateway, Handled};
use crate::bridge::modern_clients::{self, Pooling};
use crate::bridge::Failed;
use crate::error::GatewayError;
use crate::routing::Route;
use crate::upstream::Pool;
use bytes::Bytes;
use mcp_wire::{Era, RequestId};
use pingora::prelude::*;
use std::sync::Arc;

/// Whether a request of `era` on `pool` goes to the reverse bridge: a 2026-07-28 request and
/// only legacy backends (every backend's era known, none serving 2026-07-28: each positively a
/// legacy session server, by the probe or by the pool's `era`), and the bridge is on
/// (`bridge.pooled-sessions.enabled`). A backend whose answers proved nothing is of unknown
/// era and serves 2026-07-28 requests natively.
pub(super) fn takes(ctx: &RequestCtx, pool: &Pool) -> bool {
    ctx.era == Era::Stateless
        && ctx.state.config.bridge.pooled.enabled
        && pool.lacks_era(Era::Stateless)
}

/// Serves the request (its body read and checked) on the pool's legacy backends.
pub(super) async fn forward(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
    pool: &Arc<Pool>,
    body: Bytes,
) -> Handled {
    let path = route
        .upstream_path(session.req_header().uri.path())
        .into_owned();
    let principal = ctx.principal.clone();
    let list = ctx.filter.take();
    let filter = move |body: &[u8]| {
        let json = Some("application/json");
        route
            .guard
            .filter_answer(principal.as_deref(), list, json, body)
    };
    let principal = ctx.principal.clone();
    let to = Pooling {
        pool,
        path: &path,
        principal: principal.as_ref(),
        bounds: ctx.state.config.bridge.pooled,
        input_ttl: ctx.state.config.bridge.input_ttl,
        parked: ctx.state.config.bridge.parked,
        state_key: ctx.state.config.bridge.request_state_key,
        advertise: ctx.state.config.bridge.advertise.as_ref(),
        cache: mcp_wire::translate::legacy::CacheHints {
            ttl_ms: ctx.state.config.bridge.cache_ttl_ms,
            public: ctx.state.config.bridge.cache_public,
        },
        filter: list.is_some().then_some(&filter as _),
    };
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    // The route's deadline bounds each request as one exchange, as on the native path: a
    // call parked for input is bounded per round (the client's time before its retry is
    // `bridge.input-ttl-s`'s), and a `subscriptions/listen` stream not at all (a GET stream's
    // counterpart). Only a route with deadlines reads the body's method and name again.
    let deadline = route
        .has_deadlines()
        .then(|| mcp_wire::inspect_body(&body).ok())
        .flatten()
        .filter(|info| info.method.as_deref() != Some("subscriptions/listen"))
        .and_then(|info| route.deadline(info.method.as_deref(), info.name.as_deref()));
    let until = deadline.map(|d| tokio::time::Instant::now() + d);
    let serve = modern_clients::serve(&gw.bridge, session, to, &body, &id);
    let Some(served) = within(until, serve).await else {
        let e = GatewayError::bridged_deadline(&pool.name, "reverse", deadline.unwrap_or_default());
        return past_deadline(session, e, &id).await;
    };
    let served = match served {
        Ok(served) => served,
        Err(Failed::NotLegacy { backend, .. }) => {
            pool.opened_no_session(&backend);
            return pass_through(gw, session, ctx, route, pool, body).await;
        }
        Err(e) => return Err(e.into()),
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
pub(super) async fn past_deadline(
    session: &mut Session,
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
    session: &mut Session,
    ctx: &mut RequestCtx,
    route: &Route,
    pool: &Arc<Pool>,
    body: Bytes,
) -> Handled {
    // already inspected once: read again only for the deadline, on this rare path
    let deadline = match mcp_wire::inspect_body(&body) {
        Ok(info) => route.deadline(info.method.as_deref(), info.name.as_deref()),
        Err(_) => None,
    };
    let out = Outbound {
        route,
        body,
        repeatable: false,
        deadline,
        stateless: true,
    };
    forward_any(gw, session, ctx, pool, out).await
}
