//! The one gateway-driven sender of a request outside a session: a read body sent to any
//! backend of a pool through the attempt engine (another backend after a refused connection,
//! as `upstream/attempt.rs` allows), under the exchange's deadline; the answer relayed as it
//! streams (or filtered whole for a list the route's rules filter), the backend's session id
//! never passed on, a backend session on a stateless route refused (-32007), a task handle in
//! the answer learnt. Every handler that forwards outside a session calls [`forward_any`].

use crate::auth::Caller;
use crate::downstream::client::Client;
use crate::error::GatewayError;
use crate::forward::relay::{client_response, end_with_error, relay, Relayed};
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::Route;
use crate::upstream::attempt::{Pick, Step};
use crate::upstream::client::CallError;
use crate::upstream::deadline::{self, within};
use crate::upstream::request::{self, Target};
use crate::upstream::{Backend, Pool};
use bytes::Bytes;
use mcp_wire::headers::MCP_SESSION_ID;
use mcp_wire::RequestId;
use pingora::http::{RequestHeader, ResponseHeader};
use std::sync::Arc;

/// A buffered request on its way upstream.
pub(crate) struct Outbound<'a> {
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
    /// The list whose answer the route's `authz` rules filter for this caller
    /// (`Routed::filter`): read whole and filtered.
    pub filter: Option<&'static str>,
    /// Where the answer is kept when its result allows (`forward/cached.rs`); `None`: relayed
    /// as it comes.
    pub keep: Option<crate::forward::kept::Keep>,
}

/// Forwards a buffered request to any backend of `pool` (other backends after refused
/// connections, as the attempt engine allows) and relays the answer, session ids removed.
pub(crate) async fn forward_any<C: Client>(
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
            let req = match upstream_head(client, pool, &b, path_ref, len) {
                Ok(req) => req,
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
    note_era(ctx, &backend, ex.header());
    if out.stateless {
        let client = session.req_header();
        if let Some(e) =
            refuse_backend_session(gw, client, out.route, &path, pool, &backend, ex.header()).await
        {
            return Err(e.into());
        }
    }
    let head = client_response(ex.header(), None);
    crate::forward::watch::watch(gw, session, ctx, (pool, out.route), &backend);
    let id = ctx.request_id.clone().unwrap_or_else(RequestId::null);
    let relayed = match out.filter {
        Some(list) => {
            let principal = ctx.principal.as_deref();
            let pins = (out.route, &*ctx.state.pins, pool.name.as_str());
            crate::forward::filtered::relay_filtered(&mut ex, session, head, pins, principal, list)
                .await?
        }
        None => match &out.keep {
            // boxed: the cache's path is the rare one here
            Some(keep) => {
                let kept = crate::forward::kept::relay_kept(&mut ex, session, head, until, keep);
                Box::pin(kept).await?
            }
            None => {
                relay(
                    &mut ex,
                    session,
                    head,
                    until,
                    Some((&ctx.state.cache, pool)),
                )
                .await?
            }
        },
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

/// The client's request re-addressed to `backend` at `path` (its body `len` bytes), with the
/// pool's identity headers.
fn upstream_head(
    client: &RequestHeader,
    pool: &Pool,
    backend: &Backend,
    path: &str,
    len: Option<usize>,
) -> Result<RequestHeader, GatewayError> {
    let target = Target {
        path,
        host: &backend.host_header,
    };
    let mut req = request::forwarded(client, target, None, len)?;
    request::identify(&mut req, pool);
    Ok(req)
}

/// An answer that suggests the backend serves another era than the request's (a session
/// opened for a 2026-07-28 request, a refusal of a legacy one) has its era probed again.
fn note_era(ctx: &RequestCtx, backend: &Backend, answer: &ResponseHeader) {
    let opened = answer.headers.contains_key(MCP_SESSION_ID);
    let status = answer.status.as_u16();
    if crate::upstream::era::answer_suggests_other_era(ctx.era, status, opened) {
        backend.suspect_era();
    }
}

/// [`MCP_SESSION_ID`] as a header name built once (a `&str` is parsed on every lookup).
pub(crate) static SESSION_ID: http::HeaderName = http::HeaderName::from_static(MCP_SESSION_ID);

/// A stateless route carries no sessions (the gateway opens none there, and refuses a
/// backend's: [`refuse_backend_session`]), so the `Mcp-Session-Id` a client sends on one is
/// never the gateway's to pass on: it is removed from the fast path's upstream head (POST, GET
/// and DELETE alike), as every gateway-driven path removes it (`request::forwarded`). Passed on,
/// a backend session id a client learned (one the reverse bridge opened for another principal,
/// revealed by a tool) would run its requests, or its DELETE, inside that principal's session.
/// Removed rather than refused: the request means the same to a stateless backend without it,
/// and a session backend answers a request without one as it always did ("missing session").
pub(crate) fn drop_client_session(upstream: &mut RequestHeader) {
    if upstream.headers.contains_key(&SESSION_ID) {
        upstream.remove_header(&SESSION_ID);
    }
}

/// A stateless route cannot carry sessions: when its backend answers with a session of its own
/// (a legacy server behind a stateless route), that session is closed again and the client
/// gets -32007 instead of an id that the next backend would not know. The DELETE is made for
/// the caller of `client`, the client's request.
pub(crate) async fn refuse_backend_session(
    gw: &Gateway,
    client: &RequestHeader,
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
    let caller = Caller::of(&client.extensions);
    gw.engine
        .delete_session(pool, backend, upstream_path, sid, None, &caller)
        .await;
    Some(GatewayError::session_required(&route.label, &backend.label))
}
