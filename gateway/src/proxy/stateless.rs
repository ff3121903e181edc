//! Stateless requests the gateway forwards itself instead of through pingora's pipeline:
//! - legacy bodies without `Mcp-Method` on a route with rules (the pool depends on the body;
//!   pingora cannot replay a pre-read body beyond its 64 KiB retry buffer);
//! - requests under a deadline (`limits.timeout-ms`, `limits.tool-timeouts`): the whole
//!   exchange is bounded, and a request past it is cancelled upstream by closing its
//!   connection and answered with -32012;
//! - sessionless requests of stateful routes and 2026-07-28 bodies of auto routes.
//!
//! The body is read (bounded by `max-body-bytes`), checked against the MCP headers when the
//! route checks them, and forwarded as the same bytes through the attempt engine; the answer
//! streams back as it arrives. Also here: a stateless route refuses backend sessions, and
//! never passes on a client's session id.

use super::relay::{client_response, end_with_error, relay, Relayed};
use super::{check, ctx::RequestCtx, Gateway, Handled};
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::routing::Route;
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::client::CallError;
use crate::upstream::deadline::{self, within};
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::headers::MCP_SESSION_ID;
use mcp_wire::{inspect_body, RequestId};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::*;
use std::sync::Arc;

/// Reads the body, routes it (by its method and name), applies the per-tool rate and the
/// deadline, forwards it, and answers the client. `check`: compare body and MCP headers.
pub(super) async fn forward_buffered<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
    check: bool,
) -> Handled {
    let body = super::relay::request_body(session, ctx).await?;
    ctx.capture_request(&body);
    let info = if check {
        check::check_body(&session.req_header().headers, &body).map_err(|rejected| {
            ctx.request_id = rejected.id;
            rejected.error
        })?
    } else {
        inspect_body(&body)?
    };
    ctx.request_id = Some(info.request_id());
    ctx.declares_tasks = Some(info.declares_tasks);
    let (method, name) = (info.method.as_deref(), info.name.as_deref());
    super::steps::classify(ctx, &route, method, name)?;
    if super::tasks::routes(ctx, method) {
        let (method, task_id) = (
            method.unwrap_or_default().to_owned(),
            name.map(str::to_owned),
        );
        drop(info);
        let task_id = task_id.as_deref();
        let scope = route.label.clone();
        return super::tasks::forward(gw, session, ctx, &route, &scope, body, &method, task_id)
            .await;
    }
    let routed = Routed::of(&route, method, name);
    drop(info);
    forward_body(gw, session, ctx, &route, body, routed).await
}

/// Where a read and classified request goes on its route.
pub(super) struct Routed {
    /// Index into the config's pools.
    pub pool: usize,
    /// Deadline for the whole exchange.
    pub deadline: Option<std::time::Duration>,
    /// A `subscriptions/listen` (its filter is checked first).
    pub listen: bool,
}

impl Routed {
    /// Where a request of `method` and `name` goes on `route`.
    pub(super) fn of(route: &Route, method: Option<&str>, name: Option<&str>) -> Routed {
        Routed {
            pool: route.pool_for(method, name),
            deadline: route.deadline(method, name),
            listen: method == Some("subscriptions/listen"),
        }
    }
}

/// Forwards a read and classified body on `route`: to the reverse bridge when the pool's
/// backends are legacy and the request is 2026-07-28, else to any backend of the pool.
pub(super) async fn forward_body(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: &Arc<Route>,
    body: Bytes,
    routed: Routed,
) -> Handled {
    let pool = ctx.state.pool(routed.pool)?;
    let bridged = super::bridged::takes(ctx, &pool);
    if routed.listen {
        check_listen(ctx, route, &body, bridged)?;
    }
    if bridged {
        return super::bridged::forward(gw, session, ctx, route, &pool, body).await;
    }
    let out = Outbound {
        route,
        body,
        // A stateless call may have effects: never sent twice.
        repeatable: false,
        deadline: routed.deadline,
        stateless: true,
    };
    forward_any(gw, session, ctx, &pool, out).await
}

/// A `subscriptions/listen` request, before it leaves the gateway (passed through to a
/// 2026-07-28 backend, or `held` by the reverse bridge in a backend session of its own):
/// - each resource URI of its filter is decided by the route's `authz` rules as a
///   `resources/subscribe` of it (`RouteGuard::decide_listen`); one denied refuses the whole
///   listen (403 -32024, -32031 for a URI that cannot be decided), as a subscribe of it is
///   refused: a client that names a URI learns it may not, instead of a filter narrowed
///   without a reason (and a passthrough body is never rewritten);
/// - a filter the gateway holds itself is bounded as a session's subscriptions are
///   (`sessions.max-subscriptions` URIs, each at most `sessions.max-subscription-uri-bytes`):
///   -32036 over them, since each URI costs a `resources/subscribe` upstream.
pub(super) fn check_listen(
    ctx: &RequestCtx,
    route: &Route,
    body: &[u8],
    held: bool,
) -> Result<(), GatewayError> {
    if !held && !route.guard.has_rules() {
        return Ok(());
    }
    let msg: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| GatewayError::parse_error(&e.to_string()))?;
    let principal = ctx.principal.as_deref();
    (route.guard.decide_listen(principal, &msg))
        .map_err(|(_, denied)| super::authn::refusal(ctx, denied))?;
    if !held {
        return Ok(());
    }
    let bounds = &ctx.state.config.sessions;
    let uris = msg
        .pointer("/params/notifications/resourceSubscriptions")
        .and_then(serde_json::Value::as_array);
    let uris = uris.map_or(&[][..], Vec::as_slice);
    if uris.len() > bounds.max_subscriptions {
        let limit = bounds.max_subscriptions as u64;
        return Err(GatewayError::subscription_limit("too-many", limit));
    }
    let longest = uris
        .iter()
        .filter_map(serde_json::Value::as_str)
        .map(str::len);
    if longest.max().unwrap_or(0) > bounds.max_subscription_uri_bytes {
        let limit = bounds.max_subscription_uri_bytes as u64;
        return Err(GatewayError::subscription_limit("uri-too-long", limit));
    }
    Ok(())
}

/// A buffered request on its way upstream.
pub(super) struct Outbound<'a> {
    /// The route (its upstream path, its label for -32007).
    pub route: &'a Route,
    /// The whole body.
    pub body: Bytes,
    /// Safe to send twice (a pooled connection found closed is then replaced).
    pub repeatable: bool,
    /// Deadline for the whole exchange.
    pub deadline: Option<std::time::Duration>,
    /// The route is stateless: a backend session in the answer is refused (-32007).
    pub stateless: bool,
}

/// Forwards a buffered request to any backend of `pool` (other backends after refused
/// connections, as the attempt engine allows) and relays the answer, session ids removed.
pub(super) async fn forward_any<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    out: Outbound<'_>,
) -> Handled {
    let until = deadline::start(out.deadline);
    let timed_out = |ctx: &RequestCtx| {
        let backend = ctx.tried.last().map(|a| a.to_string()).unwrap_or_default();
        GatewayError::deadline(&pool.name, &backend, out.deadline.unwrap_or_default())
    };
    let client = session.req_header();
    let path = out.route.upstream_path(client.uri.path());
    let len = (client.method == http::Method::POST).then_some(out.body.len());
    let engine = gw.engine.as_ref();
    let (path_ref, body, repeatable) = (&*path, &out.body, out.repeatable);
    let attempts = engine.each_backend(pool, Pick::sessionless(ctx.era), &mut ctx.tried, |b| {
        Box::pin(async move {
            let target = Target {
                path: path_ref,
                host: &b.host_header,
            };
            let req = match request::forwarded(client, target, None, len) {
                Ok(mut req) => {
                    request::identify(&mut req, pool);
                    req
                }
                Err(e) => return Step::Stop(e),
            };
            match engine.send(pool, &b, &req, body.clone(), repeatable).await {
                Ok(ex) => Step::Done((ex, b)),
                Err(CallError::Connect(_)) => Step::Unreachable,
                Err(CallError::Credentials(e)) => Step::Stop(*e),
                Err(CallError::Lost(_)) => {
                    Step::Stop(GatewayError::backend_lost(&pool.name, &b.label))
                }
            }
        })
    });
    let sent = within(until, attempts).await;
    let path = path.into_owned();
    let Some(sent) = sent else {
        // Dropping the exchange closes its connection: the backend sees the cancel.
        return Err(timed_out(ctx).into());
    };
    let (mut ex, backend) = sent?;
    ctx.backend = Some(backend.clone());
    let opened = ex.header().headers.contains_key(MCP_SESSION_ID);
    let status = ex.header().status.as_u16();
    if crate::upstream::era::answer_suggests_other_era(ctx.era, status, opened) {
        backend.suspect_era();
    }
    if out.stateless {
        if let Some(e) =
            refuse_backend_session(gw, out.route, &path, pool, &backend, ex.header()).await
        {
            return Err(e.into());
        }
    }
    let head = client_response(ex.header(), None);
    super::tasks::watch(gw, session, ctx, (pool, out.route), &backend);
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    let relayed = match ctx.filter.take() {
        Some(list) => {
            let principal = ctx.principal.as_deref();
            super::authn::relay_filtered(&mut ex, session, head, out.route, principal, list).await?
        }
        None => relay(&mut ex, session, head, until).await?,
    };
    match relayed {
        Relayed::Done => engine.release(ex),
        Relayed::TimedOut { sse } => end_with_error(session, sse, &timed_out(ctx), &id).await?,
        Relayed::Broken { sse } => {
            let e = GatewayError::backend_lost(&pool.name, &backend.label);
            end_with_error(session, sse, &e, &id).await?;
        }
    }
    Ok(())
}

/// `Mcp-Session-Id`, as a name parsed once.
/// [`MCP_SESSION_ID`] as a header name built once (a `&str` is parsed on every lookup).
pub(super) static SESSION_ID: http::HeaderName = http::HeaderName::from_static(MCP_SESSION_ID);

/// A stateless route carries no sessions (the gateway opens none there, and refuses a
/// backend's: [`refuse_backend_session`]), so the `Mcp-Session-Id` a client sends on one is
/// never the gateway's to pass on: it is removed from the fast path's upstream head (POST, GET
/// and DELETE alike), as every gateway-driven path removes it (`request::forwarded`). Passed on,
/// a backend session id a client learned (one the reverse bridge opened for another principal,
/// revealed by a tool) would run its requests, or its DELETE, inside that principal's session.
/// Removed rather than refused: the request means the same to a stateless backend without it,
/// and a session backend answers a request without one as it always did ("missing session").
pub(super) fn drop_client_session(upstream: &mut RequestHeader) {
    if upstream.headers.contains_key(&SESSION_ID) {
        upstream.remove_header(&SESSION_ID);
    }
}

/// A stateless route cannot carry sessions: when its backend answers with a session of its own
/// (a legacy server behind a stateless route), that session is closed again and the client
/// gets -32007 instead of an id that the next backend would not know.
pub(super) async fn refuse_backend_session(
    gw: &Gateway,
    route: &Route,
    upstream_path: &str,
    pool: &Pool,
    backend: &Arc<Backend>,
    upstream: &ResponseHeader,
) -> Option<GatewayError> {
    if !upstream.status.is_success() {
        return None;
    }
    let sid = upstream.headers.get(MCP_SESSION_ID)?.to_str().ok()?;
    gw.engine
        .delete_session(pool, backend, upstream_path, sid, None)
        .await;
    Some(GatewayError::session_required(&route.label, &backend.label))
}
