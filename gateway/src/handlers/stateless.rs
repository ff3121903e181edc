//! Stateless requests the gateway forwards itself instead of through pingora's pipeline:
//! - legacy bodies without `Mcp-Method` on a route with rules (the pool depends on the body;
//!   pingora cannot replay a pre-read body beyond its 64 KiB retry buffer);
//! - requests under a deadline (`limits.timeout-ms`, `limits.tool-timeouts`): the whole
//!   exchange is bounded, and a request past it is cancelled upstream by closing its
//!   connection and answered with -32012;
//! - sessionless requests of stateful routes and 2026-07-28 bodies of auto routes: with the
//!   version header planned here directly; without it, read by the session handler, which
//!   hands the body back for the dispatcher (`handlers/mod.rs`) to send here
//!   ([`forward_read`]), so both take one path (the cache, the reverse-bridge check, task
//!   routing).
//!
//! The body is read (bounded by `max-body-bytes`), checked against the MCP headers when the
//! route checks them, and forwarded as the same bytes through the attempt engine; the answer
//! streams back as it arrives. Also here: a stateless route refuses backend sessions, and
//! never passes on a client's session id.

use crate::classify::Routed;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::forward::check;
use crate::forward::send::{forward_any, Outbound};
use crate::handlers::tasks::Routing;
use crate::request::{ctx::RequestCtx, Gateway, Handled};
use crate::routing::Route;
use bytes::Bytes;
use pingora::prelude::*;
use std::sync::Arc;

/// Reads the body, routes it (by its method and name), applies the per-tool rate and the
/// deadline, forwards it, and answers the client. `check`: compare body and MCP headers.
pub(crate) async fn forward_buffered<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
    check: bool,
) -> Handled {
    let body = crate::forward::relay::request_body(session, ctx).await?;
    ctx.capture_request(&body);
    forward_read(gw, session, ctx, route, body, check).await
}

/// [`forward_buffered`] from its read (and captured) body on: checked against the MCP headers
/// (`check`), classified on `route`, a task's request routed to its pod, the rest forwarded
/// ([`forward_body`]). A 2026-07-28 body the session handler read comes in here too.
pub(crate) async fn forward_read(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
    body: Bytes,
    check: bool,
) -> Handled {
    let info = check::inspect(ctx, &session.req_header().headers, &body, check)?;
    ctx.declares_tasks = Some(info.declares_tasks);
    let (method, name) = (info.method.as_deref(), info.name.as_deref());
    let routed = crate::classify::classify(ctx, &route, method, name)?;
    let changed = crate::forward::intercept::request(session, ctx, &route, method, None, &body);
    let changed = changed.await?;
    if crate::handlers::tasks::routes(ctx, method) {
        let (method, task_id) = (
            method.unwrap_or_default().to_owned(),
            name.map(str::to_owned),
        );
        drop(info);
        let body = changed.unwrap_or(body);
        let task_id = task_id.as_deref();
        let scope = route.label.clone();
        let routing = crate::handlers::tasks::forward(
            gw,
            session,
            ctx,
            (&route, &scope, routed),
            body,
            (&method, task_id),
        )
        .await?;
        return match routing {
            Routing::Answered => Ok(()),
            Routing::Balanced { routed, body } => {
                forward_body(gw, session, ctx, &route, body, routed).await
            }
        };
    }
    drop(info);
    forward_body(gw, session, ctx, &route, changed.unwrap_or(body), routed).await
}

/// Forwards a read and classified body on `route`: to the reverse bridge when the pool's
/// backends are legacy and the request is 2026-07-28, else to any backend of the pool.
pub(crate) async fn forward_body(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    route: &Arc<Route>,
    body: Bytes,
    routed: Routed,
) -> Handled {
    let pool = ctx.state.pool(routed.pool)?;
    let bridged = crate::classify::takes(ctx, &pool);
    if routed.listen {
        check_listen(ctx, route, &body, bridged)?;
    }
    if bridged {
        if crate::forward::cached::takes(ctx, route.cache, &routed) {
            let cached =
                crate::forward::cached::bridged(gw, session, ctx, (route, &routed), &pool, body);
            return Box::pin(cached).await;
        }
        let bridged =
            crate::forward::bridged::forward(gw, session, ctx, (route, &routed), &pool, body);
        return bridged.await;
    }
    let out = Outbound {
        route,
        body,
        // A stateless call may have effects: never sent twice.
        repeatable: false,
        deadline: routed.deadline,
        stateless: true,
        filter: routed.filter,
        keep: None,
    };
    if crate::forward::cached::takes(ctx, route.cache, &routed) {
        return Box::pin(crate::forward::cached::forward(
            gw, session, ctx, &pool, out,
        ))
        .await;
    }
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
pub(crate) fn check_listen(
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
        .map_err(|(_, denied)| crate::classify::refusal(ctx, denied))?;
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
