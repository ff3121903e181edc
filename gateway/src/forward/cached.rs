//! A cacheable 2026-07-28 request on its way through the response cache (`crate::cache`):
//! answered from a fresh result when the cache holds one for it (the client's id, `ttlMs`
//! lowered by the result's age, `Mcp-Gateway-Cache: hit`), else forwarded by the one sender
//! with its answer read whole (up to `cache.max-entry-bytes`) and kept when its result says
//! it may be (`miss`), or relayed untouched (`bypass`). Concurrent misses of one request make
//! one upstream request: the others wait for it and are answered from what it kept.

use crate::cache::key::{self, Keyed};
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
    let public = match key::of(&out.route.label, "", method, &out.body) {
        Keyed::Key(k) => k,
        Keyed::Retry | Keyed::Unreadable => {
            count("bypass");
            return forward_any(gw, session, ctx, pool, out).await;
        }
    };
    let keys = Keys {
        public,
        context: context(session.req_header()),
    };
    if let Some(fresh) = cache.lookup(&keys) {
        count("hit");
        return answer(session, ctx, &fresh, "hit").await;
    }
    let lead = match cache.flight(&keys) {
        Flight::Lead(lead) => Some(lead),
        Flight::Wait(mut done) => {
            let _ = tokio::time::timeout(WAIT, done.changed()).await;
            if let Some(fresh) = cache.lookup(&keys) {
                count("waited");
                return answer(session, ctx, &fresh, "hit").await;
            }
            None
        }
    };
    out.keep = Some(Keep::new(cache.clone(), keys, label, method));
    let forwarded = forward_any(gw, session, ctx, pool, out).await;
    drop(lead);
    forwarded
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
