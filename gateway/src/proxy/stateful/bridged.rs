//! The hook from stateful routes into the era bridge (`crate::bridge`): a legacy client's
//! session on 2026-07-28 backends. Only the request context is handled here; the bridge owns
//! the behaviour.

use super::call::Call;
use crate::bridge::legacy_clients::{self, Target};
use crate::bridge::{Failed, Served};
use crate::error::GatewayError;
use crate::proxy::ctx::RequestCtx;
use crate::proxy::relay::within;
use crate::proxy::{Fail, Gateway, Handled};
use crate::routing::Route;
use crate::session::{Caller, SessionRecord};
use crate::upstream::Pool;
use mcp_wire::RequestId;
use pingora::prelude::*;
use std::sync::Arc;

impl From<Failed> for Fail {
    fn from(f: Failed) -> Self {
        match f {
            Failed::Answer(e) => Fail::Answer(e),
            Failed::Io(e) => Fail::Io(e),
            Failed::NotLegacy { refusal, .. } => Fail::Answer(refusal),
        }
    }
}

fn target<'a>(ctx: &RequestCtx, pool: &'a Arc<Pool>, route: &Route, path: &'a str) -> Target<'a> {
    Target {
        pool,
        dual: route.dual_backends,
        path,
        filter: None,
        max_subscriptions: ctx.state.config.sessions.max_subscriptions,
    }
}

fn served(ctx: &mut RequestCtx, served: Result<Served, Failed>) -> Handled {
    let served = served?;
    if served.backend.is_some() {
        ctx.backend = served.backend;
    }
    Ok(())
}

/// A legacy `initialize` on a route whose backends are bridged.
pub(super) async fn initialize(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    caller: Caller,
    call: Call,
) -> Handled {
    let quota = super::quota(ctx);
    let path: String = route.upstream_path(session.req_header().uri.path()).into();
    let to = target(ctx, pool, route, &path);
    let deadline = route.deadline(call.method.as_deref(), call.name.as_deref());
    let until = deadline.map(|d| tokio::time::Instant::now() + d);
    let done = legacy_clients::initialize(
        &gw.bridge,
        &gw.sessions,
        session,
        to,
        &caller,
        call.params,
        &call.id,
        quota,
    );
    let Some(done) = within(until, done).await else {
        return past_deadline(session, pool, deadline, &call.id).await;
    };
    served(ctx, done)
}

/// The route's deadline bounds a bridged exchange as the native path's (`relay::within`):
/// the whole exchange, its rounds and the client's answers to the server's requests within it
/// included (on a native session they are part of the one POST answer too). Past it the
/// exchange is dropped (its upstream connection closed, its waits ended) and the client gets
/// -32012 ([`crate::proxy::bridged::past_deadline`]).
async fn past_deadline(
    session: &mut Session,
    pool: &Pool,
    deadline: Option<std::time::Duration>,
    id: &RequestId,
) -> Handled {
    let e = GatewayError::bridged_deadline(&pool.name, "forward", deadline.unwrap_or_default());
    crate::proxy::bridged::past_deadline(session, e, id).await
}

/// A POST in a bridged session.
pub(super) async fn call(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    rec: SessionRecord,
    call: Call,
) -> Handled {
    let path = rec.path.clone();
    let principal = ctx.principal.clone();
    let list = ctx.filter.take();
    let filter = move |body: &[u8]| {
        let json = Some("application/json");
        route
            .guard
            .filter_answer(principal.as_deref(), list, json, body)
    };
    let mut to = target(ctx, pool, route, &path);
    if list.is_some() {
        to.filter = Some(&filter);
    }
    let deadline = route.deadline(call.method.as_deref(), call.name.as_deref());
    let until = deadline.map(|d| tokio::time::Instant::now() + d);
    let done = legacy_clients::post(
        &gw.bridge,
        &gw.sessions,
        session,
        to,
        rec,
        &call.body,
        &call.id,
        call.repeatable,
    );
    let Some(done) = within(until, done).await else {
        return past_deadline(session, pool, deadline, &call.id).await;
    };
    served(ctx, done)
}

/// GET or DELETE in a bridged session.
pub(super) async fn get_or_delete(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut RequestCtx,
    (pool, route): (&Arc<Pool>, &Route),
    rec: SessionRecord,
) -> Handled {
    let done = if session.req_header().method == http::Method::DELETE {
        legacy_clients::delete(&gw.bridge, &gw.sessions, session, pool, rec).await
    } else {
        let to = (pool, route.dual_backends);
        legacy_clients::get(&gw.bridge, &gw.sessions, session, to, rec).await
    };
    served(ctx, done)
}
