//! Stateful routes: HTTP glue between the client and the session manager. A client's
//! `initialize` opens a gateway session; later requests are forwarded within it (the manager
//! moves the session when its backend fails, so the client never notices); what cannot be
//! repeated safely gets a JSON-RPC error. Nothing here touches the session store. A
//! 2026-07-28 body without the version header on an auto route is no session's: [`handle`]
//! hands it back ([`Served::Sessionless`]) and the dispatcher in `handlers/mod.rs` sends it
//! the stateless path's way, as if it had the header.

use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::forward::intercept;
mod bridged;
mod call;
mod events;
mod in_session;
mod quota;
mod subscriptions;

use crate::bridge::legacy_clients::{self, bridge_over_if_needed};
use crate::config::Mode;
use crate::forward::relay::{client_response, relay, Relayed};
use crate::forward::send::{forward_any, Outbound};
use crate::request::{ctx::RequestCtx, Gateway, Handled};
use crate::routing::Route;
use crate::session::{Opened, Opening, Requester};
use crate::upstream::Pool;
use bytes::Bytes;
use call::Call;
use quota::quota;
use std::sync::Arc;

/// What the session handler made of a POST: answered, or handed back for its dispatcher
/// (`handlers/mod.rs`) to send the way a sessionless 2026-07-28 request goes ([`modern`]).
pub(crate) enum Served {
    /// The client has its answer.
    Answered,
    /// A 2026-07-28 body without the version header on an auto route: its body, read and
    /// captured, its era noted in the context; not classified yet.
    Sessionless(Bytes),
}

/// Handles a request on a stateful (or auto, legacy-era) route (a GET or DELETE:
/// [`stream_or_delete`]).
pub(crate) async fn handle<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
) -> Result<Served, crate::error::Fail> {
    let state = ctx.state.clone();
    let pool = state.pool(route.default_pool)?;
    let caller = requester(ctx);
    let sid = mcp_wire::headers::session_id(&session.req_header().headers);
    let method = &session.req_header().method;
    if method != http::Method::POST {
        let err =
            crate::error::GatewayError::method_not_allowed(method.as_str(), "GET, POST, DELETE");
        return Err(err.into());
    }
    // Every branch but a call within a session is boxed where it is awaited: this future is
    // moved whole (into its box, through `within`), so an inlined branch would be copied on
    // every call, whether it runs or not.
    let body = crate::forward::relay::request_body(session, ctx).await?;
    ctx.capture_request(&body);
    let mut call = Call::classify(body)?;
    ctx.request_id = Some(call.id.clone());
    if route.mode == Mode::Auto && call.stateless {
        return Ok(modern(ctx, call));
    }
    let classified =
        crate::classify::classify(ctx, &route, call.method.as_deref(), call.name.as_deref())?;
    call.deadline = classified.deadline;
    call.filter = classified.filter;
    let (method, session_id) = (call.method.as_deref(), sid.as_deref());
    let changed = intercept::request(session, ctx, &route, method, session_id, &call.body);
    if let Some(body) = changed.await? {
        call.body = body;
    }
    let routed = (&pool, &*route);
    let answered = match sid {
        None if call.is("initialize") && legacy_clients::bridges(&pool, route.dual_backends) => {
            Box::pin(bridged::initialize(gw, session, ctx, routed, caller, call)).await
        }
        None if call.is("initialize") => {
            Box::pin(initialize(gw, session, ctx, routed, caller, call)).await
        }
        None => {
            let (body, repeatable) = (call.body, (call.repeatable, call.filter));
            Box::pin(sessionless(
                gw, session, ctx, &pool, &route, body, repeatable,
            ))
            .await
        }
        // Looked up after the body is read, so a 404 carries the request's id.
        Some(sid) => {
            let rec = gw.sessions.lookup(&sid, &caller).await?;
            let client = session.req_header();
            let rec = bridge_over_if_needed(&gw.sessions, &pool, route.dual_backends, rec, client)
                .await?;
            subscriptions::admit(&call, &rec, &state.config)?;
            if rec.binding.is_bridged() {
                Box::pin(bridged::call(gw, session, ctx, routed, rec, call)).await
            } else {
                in_session::call(gw, session, ctx, routed, rec, call).await
            }
        }
    };
    answered.map(|()| Served::Answered)
}

/// Who asks, for the session's checks and counts: with `auth` a session counts against its
/// principal (`sessions.max-per-principal`), whether or not another limit made admission name
/// the caller.
fn requester(ctx: &RequestCtx) -> Requester {
    let principal = crate::classify::principal_id(ctx);
    let identity = ctx.admitted.identity.clone().or_else(|| principal.clone());
    Requester {
        identity: identity.unwrap_or_default(),
        principal,
    }
}

/// A 2026-07-28 body without the version header on an auto route: no session, so it is no
/// call of this handler's. Handed back (its era noted as its body's) to take exactly the path
/// the same body with the header takes (the stateless path: classified on the route, the
/// cache, the reverse-bridge check, task routing), which the dispatcher gives it: a handler
/// never calls another.
fn modern(ctx: &mut RequestCtx, call: Call) -> Served {
    ctx.era = mcp_wire::Era::Stateless;
    Served::Sessionless(call.body)
}

/// A GET (the session's stream) or DELETE on a stateful (or auto, legacy-era) route. Served
/// apart from [`handle`] (`Plan::SessionStream`), and its branches boxed, so that a stream held
/// for hours holds only what streaming needs, not room for a call's state (issue 52).
pub(crate) async fn stream_or_delete<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    route: Arc<Route>,
) -> Handled {
    let pool = ctx.state.pool(route.default_pool)?;
    let caller = requester(ctx);
    let sid = mcp_wire::headers::session_id(&session.req_header().headers);
    let Some(sid) = sid else {
        let route = &*route;
        return Box::pin(sessionless(
            gw,
            session,
            ctx,
            &pool,
            route,
            Bytes::new(),
            (true, None),
        ))
        .await;
    };
    let rec = gw.sessions.lookup(&sid, &caller).await?;
    let client = session.req_header();
    let rec = bridge_over_if_needed(&gw.sessions, &pool, route.dual_backends, rec, client).await?;
    if rec.binding.is_bridged() {
        let routed = (&pool, &*route);
        return Box::pin(bridged::get_or_delete(gw, session, ctx, routed, rec)).await;
    }
    if session.req_header().method == http::Method::DELETE {
        Box::pin(in_session::delete(gw, session, &pool, rec)).await
    } else {
        in_session::stream(gw, session, ctx, &pool, rec).await
    }
}

/// A request without a session (and not an initialize): forwarded to any backend, which
/// answers it (legacy servers refuse it with 400; throwaway session ids are dropped); a list
/// the route's rules filter for the caller (`filter`) is filtered.
async fn sessionless(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    route: &Route,
    body: Bytes,
    (repeatable, filter): (bool, Option<&'static str>),
) -> Handled {
    let out = Outbound {
        route,
        body,
        repeatable,
        deadline: None,
        stateless: false,
        filter,
        keep: None,
    };
    forward_any(gw, session, ctx, pool, out).await
}

/// A client's initialize: the manager opens the session; the client gets the backend's
/// answer with the gateway's session id.
async fn initialize(
    gw: &Gateway,
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    caller: Requester,
    call: Call,
) -> Handled {
    let quota = quota(ctx);
    let client = session.req_header();
    let opening = Opening {
        client,
        path: route.upstream_path(client.uri.path()).into(),
        body: call.body,
        params: call.params,
        caller: &caller,
        quota,
    };
    let opened = gw.sessions.open(pool, opening, &mut ctx.tried).await?;
    match opened {
        Opened::Session {
            record,
            head,
            answer,
        } => {
            ctx.backend = pool.find(record.binding.backend);
            let answer = if gw.streams.resumes() && crate::stream::is_stream(&head) {
                crate::stream::without_backend_ids(&answer)
            } else {
                answer
            };
            ctx.capture_response(&answer);
            let mut head = client_response(&head, Some(&record.id));
            // the body is whole and may have changed length
            head.remove_header(&http::header::TRANSFER_ENCODING);
            let _ = head.insert_header(http::header::CONTENT_LENGTH, answer.len());
            answer::whole(session, head, answer).await?;
        }
        Opened::NotASession { head, answer } => {
            ctx.capture_response(&answer);
            answer::whole(session, client_response(&head, None), answer).await?;
        }
        Opened::Refused(mut ex) => {
            let head = client_response(ex.header(), None);
            if let Relayed::Done = relay(&mut ex, session, head, None, None).await? {
                gw.engine.release(ex);
            }
        }
    }
    Ok(())
}

/// The size of a call's future within a session (for `proxy/future_sizes.rs`).
#[cfg(test)]
pub(crate) fn in_session_call_size() -> usize {
    fn of<A, B, C, D, E, G, F: std::future::Future>(
        _: impl FnOnce(A, B, C, D, E, G) -> F,
    ) -> usize {
        std::mem::size_of::<F>()
    }
    of(in_session::call::<pingora::proxy::Session>)
}
