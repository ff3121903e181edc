//! The hook from stateless and auto routes into the reverse era bridge
//! (`crate::bridge::pooled`): a 2026-07-28 request whose pool has only legacy backends goes
//! inside a backend session the gateway keeps. Only the request context is handled here.

use super::ctx::RequestCtx;
use super::{Gateway, Handled};
use crate::bridge::pooled::{self, Pooling};
use crate::mcp::{Era, RequestId};
use crate::routing::Route;
use crate::upstream::Pool;
use bytes::Bytes;
use pingora::prelude::*;
use std::sync::Arc;

/// Whether a request of `era` on `pool` goes to the reverse bridge: a 2026-07-28 request and
/// only legacy backends (every backend's era known, none serving 2026-07-28), and the bridge
/// is on (`bridge.pooled-sessions.enabled`).
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
        cache: crate::mcp::bridge::legacy::CacheHints {
            ttl_ms: ctx.state.config.bridge.cache_ttl_ms,
            public: ctx.state.config.bridge.cache_public,
        },
        filter: list.is_some().then_some(&filter as _),
    };
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    let served = pooled::serve(&gw.bridge, session, to, &body, &id).await?;
    if served.backend.is_some() {
        ctx.backend = served.backend;
    }
    Ok(())
}
