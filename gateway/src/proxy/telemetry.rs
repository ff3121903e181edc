//! The proxy's side of traces: a request's handling runs with its span as the current
//! context (so what the session manager does inside lands in it), and at the end the span
//! gets what the context learned (method, name, route, pool, backend, session, status).

use crate::config::Mode;
use crate::request::ctx::RequestCtx;
use crate::telemetry::Finished;
use mcp_wire::headers::{MCP_PROTOCOL_VERSION, MCP_SESSION_ID};
use mcp_wire::Era;
use opentelemetry::context::FutureExt;
use opentelemetry::Context;
use pingora::prelude::*;
use std::future::Future;

/// Runs `fut` with `cx` as the current context, if traces are on.
pub(super) async fn within<F: Future>(cx: Option<Context>, fut: F) -> F::Output {
    match cx {
        Some(cx) => fut.with_context(cx).await,
        None => fut.await,
    }
}

/// The pool a request of `method` and `name` went to: the fast path's, else the one its
/// route picks (a legacy session's: the route's default pool).
pub(super) fn pool_of(
    ctx: &RequestCtx,
    method: Option<&str>,
    name: Option<&str>,
) -> Option<String> {
    match (&ctx.native, &ctx.route) {
        (Some(native), _) => Some(native.pool.name.clone()),
        (None, Some(route)) => {
            let legacy = route.mode == Mode::Stateful
                || (route.mode == Mode::Auto && ctx.era == Era::Legacy);
            let index = if legacy {
                route.default_pool
            } else {
                route.pool_for(method, name)
            };
            ctx.state.pool(index).ok().map(|p| p.name.clone())
        }
        (None, None) => None,
    }
}

/// Ends the request's span, if it has one.
pub(super) fn finish(session: &Session, ctx: &mut RequestCtx) {
    let Some(cx) = ctx.otel.take() else {
        return;
    };
    let req = session.req_header();
    let response = session.response_written();
    let header = |h: &http::HeaderMap, name: &str| -> Option<String> {
        h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let session_id = header(&req.headers, MCP_SESSION_ID)
        .or_else(|| response.and_then(|r| header(&r.headers, MCP_SESSION_ID)));
    let version = header(&req.headers, MCP_PROTOCOL_VERSION);
    let status = response.map(|r| r.status.as_u16());
    let (method, name) = match ctx.mcp_call.as_deref() {
        Some((m, n)) => (Some(m.as_str()), n.as_deref()),
        None => (None, None),
    };
    let pool = pool_of(ctx, method, name);
    let backend = ctx.backend.as_ref().map(|b| b.label.clone());
    let cache = response.and_then(|r| header(&r.headers, crate::forward::kept::CACHE_HEADER));
    let done = Finished {
        method,
        name,
        route: ctx.route.as_ref().map(|r| r.label.as_str()),
        pool: pool.as_deref(),
        backend: backend.as_deref(),
        session: session_id.as_deref(),
        protocol_version: version.as_deref(),
        status,
        outcome: super::verdict::outcome(session, ctx, status).0,
        cache: cache.as_deref(),
    };
    crate::telemetry::finish(&cx, &done);
}
