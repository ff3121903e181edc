//! The hook from stateful routes into the era bridge (`crate::bridge`): a legacy client's
//! session on 2026-07-28 backends. Only the request context is handled here; the bridge owns
//! the behaviour.

use super::call::Call;
use crate::bridge::{self, Failed, Served, Target};
use crate::proxy::ctx::RequestCtx;
use crate::proxy::{Fail, Gateway, Handled};
use crate::routing::Route;
use crate::session::{Caller, SessionRecord};
use crate::upstream::Pool;
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

fn target<'a>(pool: &'a Arc<Pool>, route: &Route, path: &'a str) -> Target<'a> {
    Target {
        pool,
        dual: route.dual_backends,
        path,
        filter: None,
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
    let to = target(pool, route, &path);
    let done = bridge::initialize(
        &gw.bridge,
        &gw.sessions,
        session,
        to,
        &caller,
        call.params,
        &call.id,
        quota,
    )
    .await;
    served(ctx, done)
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
    let mut to = target(pool, route, &path);
    if list.is_some() {
        to.filter = Some(&filter);
    }
    let done = bridge::post(
        &gw.bridge,
        &gw.sessions,
        session,
        to,
        rec,
        &call.body,
        &call.id,
        call.repeatable,
    )
    .await;
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
        bridge::delete(&gw.bridge, &gw.sessions, session, pool, rec).await
    } else {
        let to = (pool, route.dual_backends);
        bridge::get(&gw.bridge, &gw.sessions, session, to, rec).await
    };
    served(ctx, done)
}
