//! A cacheable 2026-07-28 request on its way through the response cache (`crate::cache`):
//! answered from a fresh result when the cache holds one for it (the client's id, `ttlMs`
//! lowered by the result's age, `Mcp-Gateway-Cache: hit`), else forwarded by the one sender
//! with its answer read whole (up to `cache.max-entry-bytes`) and kept when its result says
//! it may be (`miss`), or relayed untouched (`bypass`). Concurrent misses of one request make
//! one upstream request: the others wait for it and are answered from what it kept. The
//! answers the gateway makes whole itself (a virtual server's merged ones: [`own`]; the
//! reverse bridge's: [`bridged`]) go the same way.

use crate::cache::key::{self, Keyed};
use crate::cache::scopes::Scopes;
use crate::cache::store::{Key, Missing};
use crate::cache::{Flight, Keys, Leading, Outcome};
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::forward::holding::{Ended, Holding};
use crate::forward::kept::{Keep, CACHE_HEADER};
use crate::forward::send::{forward_any, Outbound};
use crate::request::ctx::RequestCtx;
use crate::request::{Gateway, Handled};
use crate::routing::Route;
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
/// filter of the route's `authz` rules (a filtered answer is per caller), all as `routed`, the
/// request's classification, says.
pub(crate) fn takes(
    ctx: &RequestCtx,
    cache_on_route: bool,
    routed: &crate::classify::Routed,
) -> bool {
    ctx.state.cache.config().enabled
        && cache_on_route
        && ctx.era == mcp_wire::Era::Stateless
        && routed.filter.is_none()
        && cacheable::is_cacheable(routed.method)
}

/// What looking a request up did.
enum Looked {
    /// Answered from the cache.
    Answered,
    /// Not in the cache: ask (leading the flight, when this request does).
    Ask(Option<Leading>),
}

/// Looks a request up (a hit answered, `stale` counted), else leads or joins its flight
/// (`crate::cache::flight`): a request that waited is answered from what the one in flight
/// kept, or leads, or asks itself, as the leader's outcome says; one that waited its longest
/// takes the lead. A request without keys (a retry, unreadable) asks.
async fn look(
    session: &mut impl Client,
    ctx: &RequestCtx,
    keys: Option<&mut Keys>,
    at: (&str, &'static str),
) -> Result<Looked, crate::error::Fail> {
    let Some(keys) = keys else {
        return Ok(Looked::Ask(None));
    };
    let cache = &ctx.state.cache;
    match cache.lookup(keys, at).await {
        Ok(fresh) => {
            cache.metrics().count(at.0, at.1, "hit");
            answer(session, ctx, &fresh, "hit").await?;
            return Ok(Looked::Answered);
        }
        Err(Missing::Stale) => cache.metrics().count(at.0, at.1, "stale"),
        Err(Missing::Absent) => {}
    }
    let until = tokio::time::Instant::now() + WAIT;
    let mut private = false;
    loop {
        let mut done = match cache.flight(keys, private) {
            Flight::Lead(lead) => return Ok(Looked::Ask(Some(lead))),
            Flight::Wait(done) => done,
        };
        let told = tokio::time::timeout_at(until, done.wait_for(|o| *o != Outcome::Pending));
        let outcome = match told.await {
            Err(_) => return Ok(Looked::Ask(Some(cache.take_lead(keys, private)))),
            Ok(Ok(outcome)) => *outcome,
            Ok(Err(_)) => Outcome::Nothing,
        };
        if let Ok(fresh) = cache.lookup_here(keys) {
            cache.metrics().count(at.0, at.1, "waited");
            answer(session, ctx, &fresh, "hit").await?;
            return Ok(Looked::Answered);
        }
        match outcome {
            Outcome::Pass => return Ok(Looked::Ask(None)),
            Outcome::Private if keys.context.is_none() => return Ok(Looked::Ask(None)),
            Outcome::Private => private = true,
            _ => cache.retake(keys),
        }
    }
}

/// The keys of a request with `body` for `method` from `source` (in `scopes`), the caller's
/// context from `session`; `None` for a request that has none (a retry, unreadable, unbounded).
fn keys_of(
    session: &impl Client,
    ctx: &RequestCtx,
    (source, scopes): (key::Source<'_>, Scopes),
    (method, body): (&str, &[u8]),
) -> Option<Keys> {
    match key::of(source, method, body) {
        Keyed::Key(public) => Some(Keys::new(
            public,
            context(session.req_header(), ctx),
            &source,
            scopes,
        )),
        Keyed::Retry | Keyed::Unreadable | Keyed::Unbounded => None,
    }
}

/// What of the request's head shapes its answer on `route` ([`key::head`]): `path` (the path
/// it goes upstream with) and the client's query, the route's config fingerprint, and the
/// values of `cache.vary-headers`.
fn head_of(session: &impl Client, ctx: &RequestCtx, route: &Route, path: &str) -> Key {
    let client = session.req_header();
    let target = match client.uri.query() {
        Some(query) => std::borrow::Cow::Owned(format!("{path}?{query}")),
        None => std::borrow::Cow::Borrowed(path),
    };
    let vary = ctx.state.cache.config().vary_headers.iter();
    key::head(
        &target,
        route.fingerprint,
        vary.map(|name| client.headers.get_all(name)),
    )
}

/// The source of a request forwarded on `route` to `pool`: the path it goes upstream with.
fn forwarded<'a>(
    session: &impl Client,
    ctx: &RequestCtx,
    route: &'a Route,
    backends: u64,
) -> key::Source<'a> {
    let path = route.upstream_path(session.req_header().uri.path());
    key::Source {
        route: &route.label,
        member: "",
        head: head_of(session, ctx, route, &path),
        backends,
    }
}

/// Forwards a cacheable request through the cache (see the module's doc).
pub(crate) async fn forward<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    pool: &Arc<Pool>,
    mut out: Outbound<'_>,
) -> Handled {
    let (label, method) = (out.route.label.clone(), ctx.method_label);
    let source = forwarded(session, ctx, out.route, pool.signature());
    let scopes = Scopes::from([pool.name.clone()]);
    let Some(mut keys) = keys_of(session, ctx, (source, scopes), (method, &out.body)) else {
        ctx.state.cache.metrics().count(&label, method, "bypass");
        return forward_any(gw, session, ctx, pool, out).await;
    };
    let lead = match look(session, ctx, Some(&mut keys), (&label, method)).await? {
        Looked::Answered => return Ok(()),
        Looked::Ask(lead) => lead,
    };
    let request = (out.body.clone(), pool.clone());
    let cache = ctx.state.cache.clone();
    // the lead goes with the answer: released once it is known kept or not
    out.keep = Some(Keep::new(cache, (keys, label, method), request, lead));
    forward_any(gw, session, ctx, pool, out).await
}

/// Answers a cacheable request the gateway answers itself (a virtual server's
/// `server/discover` and merged lists, on the virtual `route`, from the backends whose digest
/// `backends` gives) through the cache: from a fresh result, else with the whole answer
/// `make` makes (the client's id in it), kept when its result says it may be (under the
/// backends as they are once it is made). Concurrent misses wait for the one in flight, as
/// forwarded ones do.
pub(crate) async fn own<C: Client>(
    session: &mut C,
    ctx: &mut RequestCtx,
    (route, backends, scopes): (&Route, &(dyn Fn() -> u64 + Sync), Scopes),
    body: &[u8],
    make: impl std::future::Future<Output = Result<Bytes, crate::error::GatewayError>>,
) -> Handled {
    let (method, label) = (ctx.method_label, route.label.as_str());
    // the members' paths follow from the client's and the route's config (its fingerprint)
    let source = key::Source {
        route: label,
        member: "",
        head: head_of(session, ctx, route, session.req_header().uri.path()),
        backends: backends(),
    };
    let mut keys = keys_of(session, ctx, (source, scopes), (method, body));
    let lead = match look(session, ctx, keys.as_mut(), (label, method)).await? {
        Looked::Answered => return Ok(()),
        Looked::Ask(lead) => lead,
    };
    let made = make.await?;
    let head = ResponseHeader::build(200, Some(3))?;
    let keys = keys.and_then(|k| k.for_backends((label, backends()), method, body));
    keep_and_write(session, ctx, (keys, label, lead), head, made).await
}

/// Serves a cacheable request of a 2026-07-28 client on a pool of legacy backends through
/// the cache: the reverse bridge's answer (its `ttlMs` and `cacheScope` those of
/// `bridge.cache-hints`) is held whole and kept as a backend's would be.
pub(crate) async fn bridged<C: Client>(
    gw: &Gateway,
    session: &mut C,
    ctx: &mut RequestCtx,
    (route, routed): (&crate::routing::Route, &crate::classify::Routed),
    pool: &Arc<Pool>,
    body: Bytes,
) -> Handled {
    let method = ctx.method_label;
    let label = route.label.as_str();
    let source = forwarded(session, ctx, route, pool.signature());
    let scopes = Scopes::from([pool.name.clone()]);
    let mut keys = keys_of(session, ctx, (source, scopes), (method, &body));
    let lead = match look(session, ctx, keys.as_mut(), (label, method)).await? {
        Looked::Answered => return Ok(()),
        Looked::Ask(lead) => lead,
    };
    let limit = ctx.state.cache.config().max_entry_bytes;
    let mut holding = Holding::new(session, limit);
    let served = crate::forward::bridged::forward(
        gw,
        &mut holding,
        ctx,
        (route, routed),
        pool,
        body.clone(),
    );
    let served = served.await;
    let ended = holding.end().await;
    served?;
    match ended? {
        Ended::Whole(head, made) => {
            let now = (label, pool.signature());
            let keys = keys.and_then(|k| k.for_backends(now, method, &body));
            keep_and_write(session, ctx, (keys, label, lead), *head, made).await?;
        }
        Ended::Written => ctx.state.cache.metrics().count(label, method, "bypass"),
    }
    Ok(())
}

/// Keeps the whole answer `made` (200, `head`) to a request on the route `label` under `keys`
/// (`None`: it has none) when its result says it may be, tells the flight it leads (if any)
/// the outcome, and writes it with `Mcp-Gateway-Cache` saying whether it was kept.
async fn keep_and_write(
    session: &mut impl Client,
    ctx: &mut RequestCtx,
    (keys, label, lead): (Option<Keys>, &str, Option<Leading>),
    mut head: ResponseHeader,
    made: Bytes,
) -> Handled {
    let cache = ctx.state.cache.clone();
    let method = ctx.method_label;
    let mut made = made;
    let stored = cacheable::stored(&made);
    let scope = stored.as_ref().map(|s| s.scope).map_err(|e| *e);
    let kept = match (keys, stored) {
        (Some(keys), Ok(stored)) => {
            let lowered = crate::forward::kept::lowered(&cache, &made, &stored);
            let kept = cache.keep(&keys, stored, (label, method)).await;
            if let (Ok(()), Some(lowered)) = (&kept, lowered) {
                made = lowered;
            }
            Some(kept)
        }
        _ => None,
    };
    if let Some(lead) = lead {
        lead.release(Outcome::of(scope, kept.map(|k| k.is_ok())));
    }
    let kept = kept.is_some_and(|k| k.is_ok());
    let how = if kept { "miss" } else { "bypass" };
    cache.metrics().count(label, method, how);
    ctx.capture_response(&made);
    head.remove_header(&http::header::TRANSFER_ENCODING);
    head.insert_header(http::header::CONTENT_TYPE, "application/json")?;
    head.insert_header(http::header::CONTENT_LENGTH, made.len())?;
    head.insert_header(CACHE_HEADER, how)?;
    answer::whole(session, head, made).await?;
    Ok(())
}

/// The authorization context of a request: the credential the auth step took off it (a route
/// with `auth`) and the values of the headers the config says make a context
/// (`cache.context-headers`: what the backend tells its users apart by on a route without
/// `auth`); `None` without either, so that a route without `auth` keeps no private result
/// unless the operator named those headers.
fn context(client: &pingora::http::RequestHeader, ctx: &RequestCtx) -> Option<Key> {
    let removed = client.extensions.get::<crate::auth::Credentials>();
    let removed = removed
        .into_iter()
        .flat_map(|c| c.0.iter().map(|(_, v)| v.as_bytes()));
    let named = ctx.state.cache.config().context_headers.iter();
    key::context(removed, named.map(|name| client.headers.get_all(name)))
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
    answer::whole(session, head, Bytes::from(body)).await?;
    Ok(())
}
