//! The answer of a request the cache may keep (`forward/cached.rs` decides which): a JSON
//! answer is read whole first, up to `cache.max-entry-bytes`, its result kept when it says it
//! may be (`ttlMs` > 0, complete, `public` or a caller's own `private`), then written whole with
//! `Mcp-Gateway-Cache: miss` (or `bypass`: not kept). A larger answer, an event stream, or one
//! that is no 2xx, is relayed as it comes (`bypass`).

use crate::cache::{Cache, Keys, Leading, Outcome};
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::forward::relay::{relay, Relayed};
use crate::upstream::client::Exchange;
use crate::upstream::deadline::within;
use bytes::BytesMut;
use mcp_wire::cacheable;
use pingora::http::ResponseHeader;
use pingora::prelude::*;
use std::sync::Arc;
use tokio::time::Instant;

/// The response header that says how the cache answered.
pub const CACHE_HEADER: &str = "mcp-gateway-cache";

/// Where a forwarded answer is kept, if its result allows.
pub(crate) struct Keep {
    cache: Arc<Cache>,
    keys: Keys,
    label: String,
    method: &'static str,
    /// The request's body and the pool it went to: an answer that taught the pool something
    /// (a backend's era, found by this very request) is kept under the key of the pool as it
    /// is now ([`Keys::for_backends`]).
    body: bytes::Bytes,
    pool: Arc<crate::upstream::Pool>,
    /// The flight this request leads, if it does: released as soon as the answer is known
    /// kept or not, before the client reads it.
    lead: Option<Leading>,
}

impl Keep {
    /// Where an answer to a request (`body`, to `pool`) with `keys` for `method` on the route
    /// `label` is kept.
    pub(crate) fn new(
        cache: Arc<Cache>,
        (keys, label, method): (Keys, String, &'static str),
        (body, pool): (bytes::Bytes, Arc<crate::upstream::Pool>),
        lead: Option<Leading>,
    ) -> Keep {
        Keep {
            cache,
            keys,
            label,
            method,
            body,
            pool,
            lead,
        }
    }

    /// Tells the waiters of the flight it leads (if any) what it found.
    fn release(&self, outcome: Outcome) {
        if let Some(lead) = &self.lead {
            lead.release(outcome);
        }
    }
}

/// Relays a cacheable request's answer, read whole first (up to `cache.max-entry-bytes`) and
/// kept when its result allows; a larger answer, or one that is no 2xx, is relayed as it
/// comes. Past the deadline or broken off while it is read, as [`relay`] ends.
pub(crate) async fn relay_kept<C: Client>(
    exchange: &mut Exchange,
    session: &mut C,
    mut head: ResponseHeader,
    until: Option<Instant>,
    keep: &Keep,
) -> Result<Relayed> {
    let encoded = crate::upstream::encoding::is_encoded(exchange.header());
    // an event stream is relayed as it streams (its notifications are the client's now): only
    // a JSON answer, one message, is read whole
    let sse = mcp_wire::sse::is_event_stream(content_type(&head));
    if !head.status.is_success() || encoded || sse {
        // never kept: the waiters need not wait for it (a failure: the next leads)
        let failed = !head.status.is_success();
        keep.release(if failed {
            Outcome::Nothing
        } else {
            Outcome::Pass
        });
        keep.count("bypass");
        let _ = head.insert_header(CACHE_HEADER, "bypass");
        return relay(exchange, session, head, until, Some(keep.heard())).await;
    }
    let limit = keep.cache.config().max_entry_bytes;
    let mut body = BytesMut::new();
    loop {
        match within(until, exchange.chunk()).await {
            None => return Ok(Relayed::TimedOut { sse }),
            Some(Err(_)) => return Ok(Relayed::Broken { sse }),
            Some(Ok(None)) => break,
            Some(Ok(Some(chunk))) => {
                body.extend_from_slice(&chunk);
                if body.len() > limit {
                    // too large to keep: what was read goes first, then the rest as it comes
                    exchange.unread(body.freeze());
                    keep.release(Outcome::Pass);
                    keep.count("bypass");
                    let _ = head.insert_header(CACHE_HEADER, "bypass");
                    return relay(exchange, session, head, until, Some(keep.heard())).await;
                }
            }
        }
    }
    let mut body = body.freeze();
    let kept = match keep.keep(&body).await {
        Some(lowered) => {
            body = lowered.unwrap_or(body);
            true
        }
        None => false,
    };
    keep.count(if kept { "miss" } else { "bypass" });
    let _ = head.insert_header(CACHE_HEADER, if kept { "miss" } else { "bypass" });
    head.remove_header(&http::header::TRANSFER_ENCODING);
    head.insert_header(http::header::CONTENT_LENGTH, body.len())?;
    answer::whole(session, head, body).await?;
    Ok(Relayed::Done)
}

impl Keep {
    /// Keeps the result in a whole answer, if it says it may be kept: `None` when it was not,
    /// else the answer to write instead when its `ttlMs` was lowered to `cache.max-ttl-ms`.
    /// The flight it leads is told the outcome.
    async fn keep(&self, body: &[u8]) -> Option<Option<bytes::Bytes>> {
        let stored = cacheable::stored(body);
        let scope = stored.as_ref().map(|s| s.scope).map_err(|e| *e);
        let now = (self.label.as_str(), self.pool.signature());
        let keys = self.keys.clone().for_backends(now, self.method, &self.body);
        let kept = match (stored, keys) {
            (Ok(stored), Some(keys)) => {
                let at = (self.label.as_str(), self.method);
                let lowered = lowered(&self.cache, body, &stored);
                Some(self.cache.keep(&keys, stored, at).await.map(|()| lowered))
            }
            _ => None,
        };
        self.release(Outcome::of(scope, kept.as_ref().map(|k| k.is_ok())));
        kept?.ok()
    }

    /// Where the relay tells changes it hears: the pool asked.
    fn heard(&self) -> (&Arc<Cache>, &Arc<crate::upstream::Pool>) {
        (&self.cache, &self.pool)
    }

    fn count(&self, result: &str) {
        self.cache.metrics().count(&self.label, self.method, result);
    }
}

/// The whole answer `body` (whose result is `stored`) written again with its `ttlMs` lowered to
/// `cache.max-ttl-ms`, when it is longer: the client is told how long the gateway keeps it.
/// `None` when it is not longer (the answer goes as it came).
pub(crate) fn lowered(
    cache: &Cache,
    body: &[u8],
    stored: &cacheable::Stored,
) -> Option<bytes::Bytes> {
    #[derive(serde::Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: &'a serde_json::value::RawValue,
    }
    if stored.ttl_ms <= cache.config().max_ttl_ms {
        return None;
    }
    let id = serde_json::from_slice::<Id<'_>>(body).ok()?;
    let capped = cache.capped(stored.clone());
    Some(cacheable::served(&capped, id.id.get(), 0).into())
}

/// An answer's `Content-Type`.
fn content_type(head: &ResponseHeader) -> Option<&str> {
    head.headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}
