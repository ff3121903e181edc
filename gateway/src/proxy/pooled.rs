//! The hook from stateless and auto routes into the reverse era bridge
//! (`crate::bridge::pooled`): a 2026-07-28 request whose pool has only legacy backends goes
//! inside a backend session the gateway keeps. Only the request context is handled here, and
//! the one way out of the bridge: a backend whose `initialize` opened no session is no legacy
//! session server, so the request goes to it as received (its era unknown until probed again).

use super::ctx::RequestCtx;
use super::stateless::{forward_any, Outbound};
use super::{Gateway, Handled};
use crate::bridge::pooled::{self, Pooling};
use crate::bridge::Failed;
use crate::mcp::{Era, RequestId};
use crate::routing::Route;
use crate::upstream::Pool;
use bytes::Bytes;
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
        state_key: ctx.state.config.bridge.request_state_key,
        advertise: ctx.state.config.bridge.advertise.as_ref(),
        cache: crate::mcp::bridge::legacy::CacheHints {
            ttl_ms: ctx.state.config.bridge.cache_ttl_ms,
            public: ctx.state.config.bridge.cache_public,
        },
        filter: list.is_some().then_some(&filter as _),
    };
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    let served = match pooled::serve(&gw.bridge, session, to, &body, &id).await {
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
    let deadline = match crate::mcp::inspect_body(&body) {
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
