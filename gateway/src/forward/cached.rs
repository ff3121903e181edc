//! A cacheable 2026-07-28 request on its way through the response cache (`crate::cache`):
//! answered from a fresh result when the cache holds one for it (the client's id, `ttlMs`
//! lowered by the result's age, `Mcp-Gateway-Cache: hit`), else forwarded by the one sender
//! with its answer read whole (up to `cache.max-entry-bytes`) and kept when its result says
//! it may be (`miss`), or relayed untouched (`bypass`). Concurrent misses of one request make
//! one upstream request: the others wait for it and are answered from what it kept.

use crate::cache::key::{self, Keyed};
use crate::cache::store::Missing;
use crate::cache::{Flight, Keys};
use crate::downstream::client::Client;
use crate::forward::kept::{Keep, CACHE_HEADER};
use crate::forward::relay::write_whole;
use crate::forward::send::{forward_any, Outbound};
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::upstream::Pool;
use bytes::Bytes;
use mcp_wire::cacheable;
use pingora::http::ResponseHeader;
use std::sync::Arc;
use std::time::Duration;

/// The longest a concurrent miss waits for the request in flight before asking itself.
const WAIT: Duration = Duration::from_secs(10);

/// Whether a request read and classified on `route` goes through the cache: a 2026-07-28
/// request for a cacheable result, the cache on (globally and on the route), and no list
/// filter of the route's `authz` rules (a filtered answer is per caller).
pub(crate) fn takes(ctx: &RequestCtx, cache_on_route: bool) -> bool {
    ctx.state.cache.config().enabled
        && cache_on_route
        && ctx.era == mcp_wire::Era::Stateless
        && ctx.filter.is_none()
        && cacheable::is_cacheable(ctx.method_label)
}

/// Forwards a cacheable request through the cache (see the module's doc).
pub(crate) async fn forward<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    mut out: Outbound<'_>,
) -> Handled {
    let cache = ctx.state.cache.clone();
    let (label, method) = (out.route.label.clone(), ctx.method_label);
    let count = |result: &str| cache.metrics().count(&out.route.label, method, result);
    let backends = pool.signature();
    let source = key::Source {
        route: &out.route.label,
        member: "",
        backends,
    };
    let public = match key::of(source, method, &out.body) {
        Keyed::Key(k) => k,
        Keyed::Retry | Keyed::Unreadable => {
            count("bypass");
            return forward_any(gw, session, ctx, pool, out).await;
        }
    };
    let mut keys = Keys {
        public,
        context: context(session.req_header()),
        epoch: 0,
    };
    let at = (out.route.label.as_str(), method);
    match cache.lookup(&mut keys, at).await {
        Ok(fresh) => {
            count("hit");
            return answer(session, ctx, &fresh, "hit").await;
        }
        Err(Missing::Stale) => count("stale"),
        Err(Missing::Absent) => {}
    }
    let lead = match cache.flight(&keys) {
        Flight::Lead(lead) => Some(lead),
        Flight::Wait(mut done) => {
            let _ = tokio::time::timeout(WAIT, done.changed()).await;
            if let Ok(fresh) = cache.lookup(&mut keys, at).await {
                count("waited");
                return answer(session, ctx, &fresh, "hit").await;
            }
            None
        }
    };
    let request = (out.body.clone(), pool.clone(), backends);
    out.keep = Some(Keep::new(cache.clone(), (keys, label, method), request));
    let forwarded = forward_any(gw, session, ctx, pool, out).await;
    drop(lead);
    forwarded
}

/// Answers a cacheable request the gateway answers itself (a virtual server's
/// `server/discover` and merged lists, on the route `label`, from the backends whose digest
/// `backends` gives) through the cache: from a fresh result, else with the whole answer
/// `make` makes (the client's id in it), kept when its result says it may be (under the
/// backends as they are once it is made). Concurrent misses wait for the one in flight, as
/// forwarded ones do.
pub(crate) async fn own<C: Client>(
    session: &mut C,
    ctx: &mut RequestCtx,
    (label, backends): (&str, &(dyn Fn() -> u64 + Sync)),
    body: &[u8],
    make: impl std::future::Future<Output = Result<Bytes, crate::error::GatewayError>>,
) -> Handled {
    let cache = ctx.state.cache.clone();
    let method = ctx.method_label;
    let at = (label, method);
    let count = |result: &str| cache.metrics().count(label, method, result);
    let source = |backends| key::Source {
        route: label,
        member: "",
        backends,
    };
    let mut keys = match key::of(source(backends()), method, body) {
        Keyed::Key(public) => Some(Keys {
            public,
            context: context(session.req_header()),
            epoch: 0,
        }),
        Keyed::Retry | Keyed::Unreadable => None,
    };
    let mut lead = None;
    if let Some(keys) = &mut keys {
        match cache.lookup(keys, at).await {
            Ok(fresh) => {
                count("hit");
                return answer(session, ctx, &fresh, "hit").await;
            }
            Err(Missing::Stale) => count("stale"),
            Err(Missing::Absent) => {}
        }
        match cache.flight(keys) {
            Flight::Lead(leading) => lead = Some(leading),
            Flight::Wait(mut done) => {
                let _ = tokio::time::timeout(WAIT, done.changed()).await;
                if let Ok(fresh) = cache.lookup(keys, at).await {
                    count("waited");
                    return answer(session, ctx, &fresh, "hit").await;
                }
            }
        }
    }
    let made = make.await?;
    let kept = match (keys, cacheable::stored(&made)) {
        (Some(mut keys), Ok(stored)) => {
            if let Keyed::Key(now) = key::of(source(backends()), method, body) {
                keys.public = now;
            }
            cache.keep(&keys, stored, at).await.is_ok()
        }
        _ => false,
    };
    drop(lead);
    let how = if kept { "miss" } else { "bypass" };
    count(how);
    ctx.capture_response(&made);
    let mut head = ResponseHeader::build(200, Some(3))?;
    head.insert_header(http::header::CONTENT_TYPE, "application/json")?;
    head.insert_header(http::header::CONTENT_LENGTH, made.len())?;
    head.insert_header(CACHE_HEADER, how)?;
    write_whole(session, head, made).await?;
    Ok(())
}

/// The authorization context of a request: the credential the auth step took off it (a route
/// with `auth`), and an `Authorization` the backend receives (a route without); `None`
/// without either.
fn context(client: &pingora::http::RequestHeader) -> Option<crate::cache::store::Key> {
    let removed = client.extensions.get::<crate::auth::Credentials>();
    let removed = removed
        .into_iter()
        .flat_map(|c| c.0.iter().map(|(_, v)| v.as_bytes()));
    let passed = client.headers.get(http::header::AUTHORIZATION);
    key::context(removed.chain(passed.map(http::HeaderValue::as_bytes)))
}

/// Answers from a fresh result: the client's id, `ttlMs` lowered by its age.
async fn answer(
    session: &mut impl Client,
    ctx: &RequestCtx,
    fresh: &crate::cache::store::Fresh,
    how: &'static str,
) -> Handled {
    let id = ctx.request_id.as_ref().map_or("null", |id| id.as_json());
    let body = cacheable::served(&fresh.stored, id, fresh.age_ms);
    let mut head = ResponseHeader::build(200, Some(3))?;
    head.insert_header(http::header::CONTENT_TYPE, "application/json")?;
    head.insert_header(http::header::CONTENT_LENGTH, body.len())?;
    head.insert_header(CACHE_HEADER, how)?;
    write_whole(session, head, Bytes::from(body)).await?;
    Ok(())
}
